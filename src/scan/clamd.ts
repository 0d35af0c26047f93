// The virus scanner of scan.clamav steps: clamd's INSTREAM command over TCP or a unix
// socket. A file clamd cannot scan — no scanner configured, clamd down or slow, the file
// over clamd's StreamMaxLength — gets the verdict `not_scanned` with the reason, never `clean`.
// Written against the socket rather than with clamscan, whose error for a stream over clamd's
// limit is a broken pipe like clamd being down: files over `maxBytes` (clamd's
// StreamMaxLength) are not sent at all, and an answer read before a broken pipe still counts.
import net from 'node:net';
import type { Readable } from 'node:stream';
import type { ScanVerdict } from '../pipelines/step-results';

export interface ScannerSettings {
  /** `tcp://host:port` or a unix socket path; undefined: no scanner. */
  address: string | undefined;
  timeoutSeconds: number;
  /** clamd's StreamMaxLength: larger files are not_scanned without a try. */
  maxBytes: number;
}

/** The scanner could not be reached (or answered nothing in time): worth retrying later. */
export class ScannerUnavailable extends Error {
  constructor(readonly reason: string) {
    super(reason);
    this.name = 'ScannerUnavailable';
  }
}

/** clamd's INSTREAM chunks: a 4-byte big-endian length, the bytes; a zero length ends the stream. */
const MAX_CHUNK = 64 * 1024;

export class ClamdScanner {
  constructor(private readonly settings: ScannerSettings) {}

  /** Scans the stream; throws ScannerUnavailable when clamd cannot be reached or gives no answer. */
  async scan(stream: Readable, bytes: number): Promise<ScanVerdict> {
    const { address, maxBytes } = this.settings;
    const unscanned = (reason: string): ScanVerdict => {
      stream.destroy();
      return { verdict: 'not_scanned', viruses: [], reason };
    };
    if (!address) return unscanned('no virus scanner is configured (CLAMD_ADDRESS)');
    if (bytes > maxBytes) return unscanned(`the file (${bytes} bytes) is larger than the scanner takes (CLAMD_MAX_BYTES, ${maxBytes})`);
    let reply: string;
    try {
      reply = await this.instream(address, stream);
    } catch (err) {
      throw new ScannerUnavailable(`clamd at ${address} is unavailable: ${(err as Error).message}`);
    } finally {
      stream.destroy();
    }
    return verdictOf(reply);
  }

  /** Sends the stream with INSTREAM and answers clamd's reply (what it sent before closing). */
  private instream(address: string, stream: Readable): Promise<string> {
    const tcp = /^tcp:\/\/([^:/]+):(\d+)$/.exec(address);
    const socket = tcp ? net.connect({ host: tcp[1], port: Number(tcp[2]) }) : net.connect({ path: address });
    socket.setTimeout(this.settings.timeoutSeconds * 1000);
    const chunks: Buffer[] = [];
    socket.on('data', (d: Buffer) => chunks.push(d));
    const answered = new Promise<string>((resolve, reject) => {
      const text = () => Buffer.concat(chunks).toString('utf8').replace(/\0/g, '').trim();
      socket.once('timeout', () => socket.destroy(new Error(`no answer within ${this.settings.timeoutSeconds} s`)));
      let failure: Error | undefined;
      // A write into a socket clamd closed after answering: the answer counts.
      socket.once('error', (err) => (failure = err));
      socket.once('close', () => (text() ? resolve(text()) : reject(failure ?? new Error('the connection closed without an answer'))));
    });
    const send = async () => {
      await new Promise<void>((resolve, reject) => {
        socket.once('connect', resolve);
        socket.once('error', reject);
      });
      socket.write('zINSTREAM\0');
      for await (const data of stream as AsyncIterable<Buffer>) {
        for (let at = 0; at < data.length; at += MAX_CHUNK) {
          const part = data.subarray(at, at + MAX_CHUNK);
          const length = Buffer.alloc(4);
          length.writeUInt32BE(part.length);
          if (socket.destroyed || socket.writableEnded) return;
          if (!socket.write(Buffer.concat([length, part]))) await new Promise((r) => socket.once('drain', r));
        }
      }
      socket.end(Buffer.alloc(4));
    };
    // A failed send shows in the answer (or its absence), not as a second error.
    send().catch(() => socket.destroy());
    return answered;
  }
}

/** clamd's reply to INSTREAM: `stream: OK`, `stream: <name> FOUND`, or `<message> ERROR`. */
export function verdictOf(reply: string): ScanVerdict {
  if (/^stream: OK$/.test(reply)) return { verdict: 'clean', viruses: [], reason: null };
  const found = /^stream: (.+) FOUND$/.exec(reply);
  if (found) return { verdict: 'infected', viruses: [found[1]!], reason: null };
  return { verdict: 'not_scanned', viruses: [], reason: `clamd could not scan it: ${reply.replace(/\s*ERROR$/, '').slice(0, 200)}` };
}
