// An origin for import tests on 127.0.0.1: serves one file with a strong ETag, honours
// Range with a matching If-Range, can cut its next answer mid-file like a dropped connection,
// and counts the bytes it sent. `/missing` answers 404.
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface FileOrigin {
  /** `http://127.0.0.1:port` */
  base: string;
  /** The next answer sends `bytes` of the file, then the connection drops. */
  cutNextAfter(bytes: number): void;
  /** Bytes sent so far (reset with `served = 0`). */
  served: number;
  /** The Authorization header of the last request. */
  lastAuthorization: string | undefined;
  close(): Promise<void>;
}

export async function startFileOrigin(file: Buffer, o: { etag?: string; contentType?: string } = {}): Promise<FileOrigin> {
  const etag = o.etag ?? '"f1"';
  const typed = o.contentType ? { 'content-type': o.contentType } : {};
  let cutAfter: number | undefined;
  const server = http.createServer((req, res) => {
    origin.lastAuthorization = req.headers.authorization;
    if (req.url === '/missing') {
      res.writeHead(404);
      return res.end();
    }
    const range = /^bytes=(\d+)-$/.exec(req.headers.range ?? '');
    const from = range && req.headers['if-range'] === etag ? Number(range[1]) : 0;
    if (from > 0)
      res.writeHead(206, {
        etag,
        'content-range': `bytes ${from}-${file.length - 1}/${file.length}`,
        'content-length': file.length - from,
      });
    else res.writeHead(200, { ...typed, etag, 'content-length': file.length });
    if (cutAfter !== undefined) {
      const n = cutAfter;
      cutAfter = undefined;
      origin.served += n;
      res.write(file.subarray(from, from + n), () => setTimeout(() => res.socket?.destroy(), 50));
      return;
    }
    origin.served += file.length - from;
    res.end(file.subarray(from));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const origin: FileOrigin = {
    base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    cutNextAfter: (bytes) => void (cutAfter = bytes),
    served: 0,
    lastAuthorization: undefined,
    close: async () => {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
  return origin;
}
