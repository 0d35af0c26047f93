// A pass-through stream on the upload path: counts and hashes bytes as they flow to the
// store, keeps the first bytes for type sniffing, and fails the pipe when the body is
// longer or shorter than Content-Length. Nothing is buffered beyond the sniff window.
import { createHash, type Hash } from 'node:crypto';
import { Transform, type TransformCallback } from 'node:stream';
import { problem, type Problem } from '../errors';
import { noteStreamedBytes } from './gc-pacer';
import { HeadBytes } from './staged-copy';

export class BodyMeter extends Transform {
  bytes = 0;
  private readonly first = new HeadBytes();
  /** Set when the meter itself stopped the stream (so callers report it, not the store's echo). */
  failure: Problem | undefined;
  private readonly hash: Hash = createHash('sha256');

  /** The body's first bytes, for sniffing its type. */
  get head(): Buffer {
    return this.first.value;
  }
  private digest: string | undefined;

  /** With `expectedSha256` (hex), a body that hashes otherwise fails at its end (nothing stored). */
  constructor(
    private readonly expected: number,
    private readonly expectedSha256?: string,
    /** False for a body of unknown length (a form's file part): `expected` is then a maximum. */
    private readonly exact = true,
  ) {
    super();
  }

  override _transform(chunk: Buffer, _enc: BufferEncoding, cb: TransformCallback): void {
    this.bytes += chunk.length;
    if (this.bytes > this.expected) {
      const p = this.exact
        ? problem('body_incomplete', `Body is longer than Content-Length (${this.expected} bytes).`)
        : problem('payload_too_large', `The file is larger than the maximum of ${this.expected} bytes.`, {
            extra: { maxBytes: this.expected },
          });
      return cb(this.fail(p));
    }
    this.first.add(chunk);
    this.hash.update(chunk);
    noteStreamedBytes(chunk.length);
    cb(null, chunk);
  }

  override _flush(cb: TransformCallback): void {
    if (this.exact && this.bytes !== this.expected) {
      return cb(this.fail(problem('body_incomplete', `Body ended after ${this.bytes} of ${this.expected} bytes.`)));
    }
    this.digest = this.hash.digest('hex');
    if (this.expectedSha256 && this.digest !== this.expectedSha256) {
      return cb(
        this.fail(problem('checksum_mismatch', `The body hashes to ${this.digest}, not the declared SHA-256 ${this.expectedSha256}.`)),
      );
    }
    cb();
  }

  /** Marks the body as cut off by the client (connection closed mid-body). */
  abort(): void {
    this.destroy(this.fail(problem('body_incomplete', `Connection closed after ${this.bytes} of ${this.expected} bytes.`)));
  }

  get sha256(): string {
    if (!this.digest) throw new Error('body not complete');
    return this.digest;
  }

  private fail(p: Problem): Problem {
    this.failure ??= p;
    return p;
  }
}
