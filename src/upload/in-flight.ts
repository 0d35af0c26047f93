// Uploads in flight per tenant in this API process (being received or awaited). One tenant
// cannot take every socket, store stream and worker slot: past the limit it gets 429 with
// Retry-After before its body is read. Per process: with N API replicas a tenant may have up
// to N times the limit in flight (no shared counter on the hot path).
import { metrics } from '../metrics';

export class InFlightUploads {
  private readonly counts = new Map<string, number>();

  constructor(readonly limit: number) {}

  /** A release function when a slot was free, else undefined. */
  tryAcquire(tenantId: string): (() => void) | undefined {
    const n = this.counts.get(tenantId) ?? 0;
    if (n >= this.limit) return undefined;
    this.counts.set(tenantId, n + 1);
    metrics.uploadsInFlight.inc();
    let released = false;
    return () => {
      if (released) return;
      released = true;
      metrics.uploadsInFlight.dec();
      const left = (this.counts.get(tenantId) ?? 1) - 1;
      if (left <= 0) this.counts.delete(tenantId);
      else this.counts.set(tenantId, left);
    };
  }
}
