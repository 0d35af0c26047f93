// The requests each Idempotency-Key saw, written behind the answers: each API process buffers
// them and appends a batch a second in one statement, so a replay pays no database write of
// its own. Best effort: a batch the database refuses is dropped (logged and counted), and a
// process killed loses at most its last second.
import type { Logger } from 'pino';
import type { Pool } from '../db/pool';
import { appendKeyRequests, type KeyRequest } from '../db/queries/key-requests';
import { metrics } from '../metrics';

/** Requests kept whole per key (the tally counts the rest). */
export const KEPT_PER_KEY = 50;

export class KeyRequestLog {
  private buffer: KeyRequest[] = [];
  private writing?: Promise<void>;
  private readonly timer: NodeJS.Timeout;

  constructor(private readonly deps: { pool: Pool; log: Logger; intervalMs?: number; maxBuffered?: number }) {
    this.timer = setInterval(() => void this.flush(), deps.intervalMs ?? 1000);
    this.timer.unref();
  }

  note(request: KeyRequest): void {
    if (this.buffer.length >= (this.deps.maxBuffered ?? 50_000)) return void metrics.keyRequestsDropped.inc();
    this.buffer.push(request);
  }

  /** Writes what is buffered (after a write under way, if any). */
  async flush(): Promise<void> {
    while (this.writing) await this.writing;
    const batch = this.buffer;
    if (batch.length === 0) return;
    this.buffer = [];
    this.writing = appendKeyRequests(this.deps.pool, batch, KEPT_PER_KEY)
      .catch((err: unknown) => {
        metrics.keyRequestsDropped.inc(batch.length);
        this.deps.log.warn({ err, requests: batch.length }, 'key request log: a batch was not written');
      })
      .finally(() => (this.writing = undefined));
    await this.writing;
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.flush();
  }
}
