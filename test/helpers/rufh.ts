// One HTTP exchange over a real socket that keeps the interim (1xx) answers the server
// sends before its final one, and lets the test write the body piece by piece, wait for a
// 104, or cut the connection: what RUFH clients (URLSession, curl) see.
import http from 'node:http';

export interface Interim {
  statusCode: number;
  headers: http.IncomingHttpHeaders;
}

export interface FinalAnswer {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
  json: any;
}

export interface Exchange {
  interims: Interim[];
  /** The first interim answer (after those already seen) that `pred` accepts. */
  interim(pred: (i: Interim) => boolean, timeoutMs?: number): Promise<Interim>;
  write(bytes: Buffer): Promise<void>;
  end(bytes?: Buffer): void;
  /** The final answer; undefined when the exchange was cut before it. */
  response: Promise<FinalAnswer | undefined>;
  cut(): void;
}

export function exchange(url: string, method: string, headers: Record<string, string>): Exchange {
  const interims: Interim[] = [];
  const waiters: { pred: (i: Interim) => boolean; resolve: (i: Interim) => void }[] = [];
  const req = http.request(url, { method, headers, agent: false });
  // The head goes out now: a server may answer (104) before any of the body is written.
  req.flushHeaders();
  req.on('information', (info) => {
    const i = { statusCode: info.statusCode, headers: info.headers };
    interims.push(i);
    for (const w of waiters.splice(0)) {
      if (w.pred(i)) w.resolve(i);
      else waiters.push(w);
    }
  });
  const response = new Promise<FinalAnswer | undefined>((resolve) => {
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let json: unknown;
        try {
          json = text ? JSON.parse(text) : undefined;
        } catch {
          json = undefined;
        }
        resolve({ status: res.statusCode!, headers: res.headers, text, json });
      });
      res.on('error', () => resolve(undefined));
    });
    req.on('error', () => resolve(undefined));
    req.on('close', () => setTimeout(() => resolve(undefined), 50));
  });
  return {
    interims,
    interim: (pred, timeoutMs = 30_000) => {
      const seen = interims.find(pred);
      if (seen) return Promise.resolve(seen);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error('no matching interim answer')), timeoutMs);
        waiters.push({
          pred,
          resolve: (i) => {
            clearTimeout(timer);
            resolve(i);
          },
        });
      });
    },
    write: (bytes) => new Promise((resolve) => req.write(bytes, () => resolve())),
    end: (bytes) => void req.end(bytes),
    response,
    cut: () => req.destroy(),
  };
}

/** The whole exchange at once: headers, an optional body, the interims and the final answer. */
export async function send(
  url: string,
  method: string,
  headers: Record<string, string>,
  body?: Buffer,
): Promise<FinalAnswer & { interims: Interim[] }> {
  const x = exchange(url, method, body ? { ...headers, 'content-length': String(body.length) } : headers);
  x.end(body);
  const res = await x.response;
  if (!res) throw new Error(`${method} ${url}: no answer`);
  return { ...res, interims: x.interims };
}
