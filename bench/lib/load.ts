// Load helpers: autocannon for HTTP (raw per-response latencies, not its rounded
// histogram) and a closed-loop runner for SDK calls.
import autocannon from 'autocannon';
import { quantile } from './stats';

export interface LoadResult {
  requests: number;
  seconds: number;
  rps: number;
  p50ms: number;
  p99ms: number;
  statuses: Record<string, number>;
}

export async function httpLoad(opts: autocannon.Options): Promise<LoadResult> {
  const latencies: number[] = [];
  const statuses: Record<string, number> = {};
  const started = performance.now();
  const instance = autocannon(opts);
  instance.on('response', (_client: unknown, status: number, _bytes: number, ms: number) => {
    latencies.push(ms);
    statuses[status] = (statuses[status] ?? 0) + 1;
  });
  await instance;
  const seconds = (performance.now() - started) / 1000;
  return summarize(latencies, seconds, statuses);
}

/** `concurrency` loops calling `fn` until `seconds` pass; each call timed. */
export async function closedLoop(concurrency: number, seconds: number, fn: (i: number) => Promise<number | void>): Promise<LoadResult> {
  const latencies: number[] = [];
  const statuses: Record<string, number> = {};
  const deadline = performance.now() + seconds * 1000;
  const started = performance.now();
  let n = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < deadline) {
        const t = performance.now();
        const status = (await fn(n++)) ?? 'ok';
        latencies.push(performance.now() - t);
        statuses[status] = (statuses[status] ?? 0) + 1;
      }
    }),
  );
  return summarize(latencies, (performance.now() - started) / 1000, statuses);
}

function summarize(latencies: number[], seconds: number, statuses: Record<string, number>): LoadResult {
  return {
    requests: latencies.length,
    seconds: Math.round(seconds * 100) / 100,
    rps: Math.round((latencies.length / seconds) * 10) / 10,
    p50ms: Math.round(quantile(latencies, 0.5) * 100) / 100,
    p99ms: Math.round(quantile(latencies, 0.99) * 100) / 100,
    statuses,
  };
}
