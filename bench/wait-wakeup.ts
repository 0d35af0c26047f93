// Scenario 5: how soon `GET /v1/uploads/{id}?wait` answers once its upload is processed.
// 100 waiters run the route's wait (awaitProcessed) against the bench database while a
// writer marks their uploads processed one by one; the latency is commit → waiter returns.
// Oncely LISTENs (Postgres NOTIFY); the baseline is the same wait polling every 250 ms
// (UPLOAD_WAIT_LISTEN=false). Ratio = baseline p50 / Oncely p50 (higher is better).
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import pino from 'pino';
import { createPool, type Pool } from '../src/db/pool';
import { insertUploadIfAbsent } from '../src/db/queries/uploads';
import { pollingOnly, UploadProcessedListener, type ProcessedSignal } from '../src/db/upload-processed';
import { awaitProcessed } from '../src/upload/await-processed';
import type { BenchServices } from './lib/services';
import { median, quantile } from './lib/stats';

const WAITERS = 100;

async function oneRun(services: BenchServices, pool: Pool, signal: ProcessedSignal) {
  const ids = Array.from({ length: WAITERS }, () => randomUUID());
  for (const id of ids) {
    await insertUploadIfAbsent(pool, {
      id,
      tenant_id: services.tenantId,
      idempotency_key: `wait-${id}`,
      workflow_id: `upload/${services.tenantId}/wait-${id}`,
      storage_key: `bench/wait/${id}`,
      sha256: '0'.repeat(64),
      content_type: 'text/plain',
      file_name: null,
      bytes: 1,
    });
  }
  let reads = 0;
  const counted = { query: (...args: Parameters<Pool['query']>) => (reads++, pool.query(...args)) } as unknown as Pool;
  const returned = new Map<string, number>();
  const waits = ids.map((id) =>
    awaitProcessed({ pool: counted, signal }, services.tenantId, id, 30_000).then(() => returned.set(id, performance.now())),
  );
  await sleep(200); // every waiter has read its row once and sleeps
  const committed = new Map<string, number>();
  for (const id of ids) {
    await sleep(5 + Math.random() * 20);
    await pool.query(`UPDATE uploads SET status = 'processed', processed_at = now() WHERE id = $1`, [id]);
    committed.set(id, performance.now());
  }
  await Promise.all(waits);
  const latencies = ids.map((id) => Math.max(0, returned.get(id)! - committed.get(id)!));
  return { p50: quantile(latencies, 0.5), p99: quantile(latencies, 0.99), readsPerWait: reads / WAITERS };
}

export async function waitWakeup(services: BenchServices, opts: { rounds: number }) {
  const pool = createPool(services.databaseUrl, 10);
  const listener = await UploadProcessedListener.start(services.databaseUrl, pino({ level: 'silent' }));
  const polling = pollingOnly();
  const oncely: Awaited<ReturnType<typeof oneRun>>[] = [];
  const baseline: Awaited<ReturnType<typeof oneRun>>[] = [];
  try {
    for (let round = 0; round < opts.rounds; round++) {
      oncely.push(await oneRun(services, pool, listener));
      baseline.push(await oneRun(services, pool, polling));
    }
  } finally {
    await listener.close();
    await pool.end();
  }
  const m = (runs: typeof oncely, k: 'p50' | 'p99' | 'readsPerWait') => Math.round(median(runs.map((r) => r[k])) * 10) / 10;
  return {
    scenario: `?wait wake-up (${WAITERS} waiters)`,
    ratio: Math.round((m(baseline, 'p50') / Math.max(0.1, m(oncely, 'p50'))) * 100) / 100,
    oncelyP50ms: m(oncely, 'p50'),
    oncelyP99ms: m(oncely, 'p99'),
    baselineP50ms: m(baseline, 'p50'),
    baselineP99ms: m(baseline, 'p99'),
    oncelyReadsPerWait: m(oncely, 'readsPerWait'),
    baselineReadsPerWait: m(baseline, 'readsPerWait'),
  };
}
