// The body of a part streamed to the store while it arrives: it reads the part buffer the
// append writer fills, each read taking every byte filled since the last one. Nothing is
// queued (the buffer holds the bytes anyway), the store's pace sets how large each read
// is, and the stream ends by itself once the part's last byte is read.
import { Readable } from 'node:stream';

export class FillingPart extends Readable {
  private sent = 0;
  private filled = 0;
  private wanted = false;

  /** `part` is the part's whole extent in the buffer; it is read as `filledTo` says it fills. */
  constructor(private readonly part: Buffer) {
    super();
  }

  get bytes(): number {
    return this.part.length;
  }

  /** The first `n` bytes of the part are in the buffer. */
  filledTo(n: number): void {
    this.filled = Math.min(n, this.part.length);
    if (this.wanted) this.give();
  }

  override _read(): void {
    this.wanted = true;
    this.give();
  }

  private give(): void {
    if (this.filled === this.sent || this.destroyed) return;
    const chunk = this.part.subarray(this.sent, this.filled);
    this.sent = this.filled;
    this.wanted = false;
    const done = this.sent === this.part.length;
    this.push(chunk);
    if (done) this.push(null);
  }
}
