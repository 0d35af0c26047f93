// Prometheus metrics (prom-client), one registry per process: the API's request outcomes
// and latencies, and the worker's upload, webhook and housekeeping outcomes. Served at
// /metrics by the API (and by the worker's own port when it runs alone).
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import { commit, version } from './version';

export const registry = new Registry();
collectDefaultMetrics({ register: registry, prefix: 'oncely_' });
new Gauge({
  name: 'oncely_build_info',
  help: 'Always 1; its labels name the build this process runs',
  labelNames: ['version', 'commit'] as const,
  registers: [registry],
}).set({ version, commit }, 1);

export const metrics = {
  requests: new Counter({
    name: 'oncely_http_requests_total',
    help: 'HTTP requests by route and outcome (created, replayed, processing, conflict, reuse, expired, rejected, unavailable, error, ok)',
    labelNames: ['method', 'route', 'outcome', 'status'] as const,
    registers: [registry],
  }),
  uploadSeconds: new Histogram({
    name: 'oncely_upload_request_seconds',
    help: 'POST /v1/uploads latency: the replay path (answered from Postgres) and the full upload path',
    labelNames: ['path'] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
    registers: [registry],
  }),
  uploadsInFlight: new Gauge({
    name: 'oncely_uploads_in_flight',
    help: 'New uploads being received or awaited by this API process (all tenants)',
    registers: [registry],
  }),
  traceSpansDropped: new Counter({
    name: 'oncely_trace_spans_dropped_total',
    help: 'Finished spans not sent to the trace collector: its queue was full (queue_full) or the collector did not take them (export_failed)',
    labelNames: ['reason'] as const,
    registers: [registry],
  }),
  bytesReceived: new Counter({
    name: 'oncely_upload_bytes_received_total',
    help: 'Body bytes received and stored by upload attempts',
    registers: [registry],
  }),
  resumableHashReadBack: new Counter({
    name: 'oncely_resumable_hash_read_back_total',
    help: 'Resumable completions whose SHA-256 was read back from the stored object (their appends changed API processes)',
    registers: [registry],
  }),
  resumableAssembleSeconds: new Histogram({
    name: 'oncely_resumable_assemble_seconds',
    help: "Completing a tus or draft upload in the store: its parts assembled into the object (S3's CompleteMultipartUpload) and checked",
    labelNames: ['mode'] as const,
    buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [registry],
  }),
  storageCopies: new Counter({
    name: 'oncely_storage_copies_total',
    help: 'Objects a storage migration copied: by the store itself (server, one S3 service) or streamed through the worker',
    labelNames: ['mode'] as const,
    registers: [registry],
  }),
  uploadsCommitted: new Counter({
    name: 'oncely_uploads_committed_total',
    help: 'Records transactions by result (created, rejected)',
    labelNames: ['result'] as const,
    registers: [registry],
  }),
  scans: new Counter({
    name: 'oncely_scans_total',
    help: 'Virus scans of scan.clamav steps by verdict (clean, infected, not_scanned)',
    labelNames: ['verdict'] as const,
    registers: [registry],
  }),
  webhookDeliveries: new Counter({
    name: 'oncely_webhook_deliveries_total',
    help: 'Webhook delivery attempts by result',
    labelNames: ['result'] as const,
    registers: [registry],
  }),
  redeliveries: new Counter({
    name: 'oncely_webhook_redeliveries_total',
    help: 'Webhook sends asked for after the automatic delivery, by trigger (manual, recover)',
    labelNames: ['trigger'] as const,
    registers: [registry],
  }),
  deletions: new Counter({
    name: 'oncely_deletions_total',
    help: 'Uploads erased by the deletion workflow, by reason (request, retention)',
    labelNames: ['reason'] as const,
    registers: [registry],
  }),
  bytesErased: new Counter({
    name: 'oncely_bytes_erased_total',
    help: 'Bytes deleted from the object store by deletions (originals no other upload shares, and renditions)',
    registers: [registry],
  }),
  keyRequestsDropped: new Counter({
    name: 'oncely_key_requests_dropped_total',
    help: "Requests left out of their key's request log (the buffer full, or the database refused a batch)",
    registers: [registry],
  }),
  housekeepingRemoved: new Counter({
    name: 'oncely_housekeeping_removed_total',
    help: 'What housekeeping removed or ended (expired_keys, tombstones, staging_objects, multipart_uploads, orphaned_imports, unused_run_keys, key_request_logs)',
    labelNames: ['kind'] as const,
    registers: [registry],
  }),
};

/** What a process's memory parts hold now; each part is reported by the module that owns it. */
const memoryParts = new Map<string, () => number>([
  ['v8_heap', () => process.memoryUsage().heapTotal],
  // Off the V8 heap: Buffers, ArrayBuffers and WebAssembly memories (PGlite's among them).
  ['external', () => process.memoryUsage().external],
]);

export function reportMemory(part: string, read: () => number): void {
  memoryParts.set(part, read);
}

new Gauge({
  name: 'oncely_memory_bytes',
  help: 'Where this process keeps its memory: v8_heap (main isolate), external (buffers, WebAssembly), pglite_wasm (part of external), libvips_cache',
  labelNames: ['part'] as const,
  registers: [registry],
  collect() {
    for (const [part, read] of memoryParts) this.set({ part }, read());
  },
});

/** The outcome label for a finished request, from its status and the error code it carried. */
export function outcomeOf(status: number, marked: string | undefined, errorCode: string | undefined): string {
  if (marked) return marked;
  if (errorCode === 'idempotency_key_reuse') return 'reuse';
  if (errorCode === 'idempotency_key_expired') return 'expired';
  if (status === 409) return 'conflict';
  if (status === 503) return 'unavailable';
  if (status >= 500) return 'error';
  if (status >= 400) return 'rejected';
  return 'ok';
}
