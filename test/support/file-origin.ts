// An origin for import tests on 127.0.0.1: serves one file with a strong ETag, honours
// Range with a matching If-Range, can cut its next answer mid-file like a dropped connection
// (once the client has taken what the test waits for), and counts the bytes it sent. `/missing` answers 404; `/redirect?to=URL` redirects there;
// `/stall` sends the file's first KiB and then nothing more; `?type=T` serves the file as T.
import http from 'node:http';
import type { ObjectStore } from '../../src/storage/store';
import { serveOnLoopback } from './loopback';

export interface FileOrigin {
  /** `http://127.0.0.1:port` */
  base: string;
  /**
   * The next answer sends `bytes` of the file, then the connection drops once `after` settles:
   * dropped at once, a reset discards what the client has not read yet, so a test that counts
   * what was stored before the cut waits for the store (see partStored).
   */
  cutNextAfter(bytes: number, after?: Promise<unknown>): void;
  /** Bytes sent so far (reset with `served = 0`). */
  served: number;
  /** The Authorization header of the last request. */
  lastAuthorization: string | undefined;
  /** Requests answered so far, and how many of them with the rest of the file (206). */
  requests: number;
  /** The path of every request so far, in order. */
  paths: string[];
  ranges: number;
  /** Sends at most `bytesPerSecond` from now on (undefined: as fast as it can). */
  throttle(bytesPerSecond: number | undefined): void;
  close(): Promise<void>;
}

export async function startFileOrigin(file: Buffer, o: { etag?: string; contentType?: string } = {}): Promise<FileOrigin> {
  const etag = o.etag ?? '"f1"';
  let cut: { bytes: number; after: Promise<unknown> } | undefined;
  let rate: number | undefined;
  const server = await serveOnLoopback((req, res) => {
    origin.lastAuthorization = req.headers.authorization;
    origin.requests++;
    const url = new URL(req.url ?? '/', 'http://origin');
    origin.paths.push(url.pathname);
    const type = url.searchParams.get('type') ?? o.contentType;
    const typed = type ? { 'content-type': type } : {};
    if (url.pathname === '/redirect') {
      res.writeHead(302, { location: url.searchParams.get('to') ?? '/' });
      return res.end();
    }
    if (url.pathname === '/stall') {
      res.writeHead(200, { etag, 'content-length': file.length });
      return void res.write(file.subarray(0, 1024));
    }
    if (url.pathname === '/missing') {
      res.writeHead(404);
      return res.end();
    }
    const range = /^bytes=(\d+)-$/.exec(req.headers.range ?? '');
    const from = range && req.headers['if-range'] === etag ? Number(range[1]) : 0;
    if (from > 0) origin.ranges++;
    if (from > 0)
      res.writeHead(206, {
        etag,
        'content-range': `bytes ${from}-${file.length - 1}/${file.length}`,
        'content-length': file.length - from,
      });
    else res.writeHead(200, { ...typed, etag, 'content-length': file.length });
    if (cut) {
      const { bytes, after } = cut;
      cut = undefined;
      origin.served += bytes;
      res.write(file.subarray(from, from + bytes), () => void after.finally(() => res.socket?.destroy()));
      return;
    }
    if (rate !== undefined) return void paced(res, file.subarray(from));
    origin.served += file.length - from;
    res.end(file.subarray(from));
  });
  /** Writes `bytes` a tenth of the rate every 100 ms, counting what was sent; stops when the client goes. */
  async function paced(res: http.ServerResponse, bytes: Buffer): Promise<void> {
    for (let at = 0; at < bytes.length && !res.destroyed;) {
      const n = Math.max(1, Math.floor((rate ?? bytes.length) / 10));
      const chunk = bytes.subarray(at, at + n);
      at += chunk.length;
      origin.served += chunk.length;
      res.write(chunk);
      await new Promise((r) => setTimeout(r, 100));
    }
    res.end();
  }
  const origin: FileOrigin = {
    base: server.base,
    cutNextAfter: (bytes, after = new Promise((r) => setTimeout(r, 50))) => void (cut = { bytes, after }),
    served: 0,
    lastAuthorization: undefined,
    requests: 0,
    paths: [],
    ranges: 0,
    throttle: (bytesPerSecond) => void (rate = bytesPerSecond),
    close: server.close,
  };
  return origin;
}

/**
 * Settles once `store` has answered for part `n` of a multipart upload, through either part
 * method of this instance (wrapped until then; the class's methods answer again after): the
 * client has read every byte before it.
 */
export function partStored(store: ObjectStore, n: number): Promise<void> {
  const own = { putPart: store.putPart, putPartStreamed: store.putPartStreamed };
  return new Promise<void>((resolve) => {
    const done = (partNumber: number) => {
      if (partNumber !== n) return;
      Reflect.deleteProperty(store, 'putPart');
      Reflect.deleteProperty(store, 'putPartStreamed');
      resolve();
    };
    store.putPart = async (key, uploadId, partNumber, bytes) => {
      const etag = await own.putPart.call(store, key, uploadId, partNumber, bytes);
      done(partNumber);
      return etag;
    };
    if (own.putPartStreamed)
      store.putPartStreamed = async (key, uploadId, partNumber, body, bytes) => {
        const etag = await own.putPartStreamed!.call(store, key, uploadId, partNumber, body, bytes);
        done(partNumber);
        return etag;
      };
  });
}
