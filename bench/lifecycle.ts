// After the upload (#23): downloading the original through GET /content against a direct
// GetObject stream of the same object; the list's latency with 10,000 and with 1,000,000
// uploads; deletions per second and CPU per delete beside a new upload's, in the same run.
import { randomUUID } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { GetObjectCommand, S3Client } from '@aws-sdk/client-s3';
import type { Readable } from 'node:stream';
import { createPool } from '../src/db/pool';
import { createTenant } from '../src/tenants';
import { postLarge } from './large-upload';
import { measureCpu } from './lib/cpu';
import { adminUrl, peakRssMiB, startOncelyProcess, type BenchServices } from './lib/services';
import { createMigratedDatabase, dropDatabase } from '../test/support/postgres';
import type { ManagedProcess } from '../src/devstack/process';
import { median, quantile } from './lib/stats';

const MiB = 1024 * 1024;

/** Reads a stream to its end, counting bytes (nothing kept). */
async function drain(stream: Readable): Promise<number> {
  let n = 0;
  for await (const chunk of stream) n += (chunk as Buffer).length;
  return n;
}

function getContent(url: string, apiKey: string): Promise<number> {
  return new Promise((resolve, reject) => {
    http
      .get(url, { headers: { authorization: `Bearer ${apiKey}` } }, (res) => {
        if (res.statusCode !== 200) reject(new Error(`GET content: ${res.statusCode}`));
        drain(res).then(resolve, reject);
      })
      .on('error', reject);
  });
}

/** Sets the process's peak RSS (VmHWM) back to its current RSS, so the next peak is one round's. */
function resetPeakRss(pid: number): void {
  writeFileSync(`/proc/${pid}/clear_refs`, '5');
}

function rssMiB(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : 0;
}

export async function downloadLarge(services: BenchServices, opts: { bytes: number; rounds: number }) {
  const s3 = new S3Client({
    endpoint: services.s3.endpoint,
    region: 'us-east-1',
    forcePathStyle: true,
    credentials: { accessKeyId: services.s3.accessKeyId, secretAccessKey: services.s3.secretAccessKey },
  });
  // Stored through one API process; downloaded through a fresh one, so its peak is the download's.
  const uploader = await startOncelyProcess(services, 'all');
  const stored = await postLarge(uploader.url, services.apiKey, opts.bytes);
  const small = await postLarge(uploader.url, services.apiKey, MiB);
  await uploader.proc.stop();
  if (stored.status !== 201 || small.status !== 201) throw new Error(`upload for the download bench failed: ${stored.status}`);
  const api = await startOncelyProcess(services, 'api');
  const floor = rssMiB(api.proc.child.pid!);
  // One 1 MiB download first: what the first request of its kind costs, apart from the size.
  await getContent(`${api.url}/v1/uploads/${small.json.uploadId}/content`, services.apiKey);
  const warm = rssMiB(api.proc.child.pid!);
  const oncely: number[] = [];
  const direct: number[] = [];
  try {
    const roundPeaks: number[] = [];
    for (let round = 0; round < opts.rounds; round++) {
      resetPeakRss(api.proc.child.pid!);
      let t = performance.now();
      const got = await getContent(`${api.url}/v1/uploads/${stored.json.uploadId}/content`, services.apiKey);
      if (got !== opts.bytes) throw new Error(`downloaded ${got} bytes of ${opts.bytes}`);
      oncely.push(opts.bytes / ((performance.now() - t) / 1000));
      roundPeaks.push(round1((await peakRssMiB(api.proc.child.pid!)) - floor));
      t = performance.now();
      const out = await s3.send(new GetObjectCommand({ Bucket: services.s3.bucket, Key: stored.json.storageKey }));
      await drain(out.Body as Readable);
      direct.push(opts.bytes / ((performance.now() - t) / 1000));
    }
    const peak = floor + Math.max(...roundPeaks);
    return {
      scenario: 'download (GET /content vs GetObject)',
      bytes: opts.bytes,
      oncelyMiBps: round1(median(oncely) / MiB),
      getObjectMiBps: round1(median(direct) / MiB),
      ratio: round2(median(oncely) / median(direct)),
      apiStartRssMiB: round1(floor),
      apiAfterFirstSmallDownloadRssMiB: round1(warm),
      apiPeakRssMiB: round1(peak),
      peakOverStartMiB: round1(peak - floor),
      peakOverWarmMiB: round1(peak - warm),
      roundPeaksOverStartMiB: roundPeaks.join(' '),
    };
  } finally {
    s3.destroy();
    await api.proc.stop();
  }
}

/**
 * GET /v1/uploads?limit=100 at the first page and at pages deep in the list, against one
 * database per size (10,000 rows in one, 1,000,000 in another), each behind its own API
 * process. The requests alternate between the two after both are seeded, vacuumed and
 * checkpointed, so the machine's noise (and the seeding's own aftermath) falls on both alike.
 */
export async function listLatency(services: BenchServices, opts: { sizes: number[]; requests: number }) {
  const out: Record<string, number | string> = { scenario: 'list (GET /v1/uploads?limit=100)' };
  const stacks: { rows: number; dbName: string; api: { proc: ManagedProcess; url: string }; apiKey: string; cursors: string[] }[] = [];
  try {
    for (const rows of opts.sizes) {
      const dbName = `oncely_bench_list_${process.pid}_${rows}`;
      const databaseUrl = await createMigratedDatabase(adminUrl, dbName);
      const pool = createPool(databaseUrl, 1);
      try {
        const tenant = await createTenant(pool, `list-${rows}`);
        // Seeded in batches (the list reads rows only): creation times spread over a year.
        for (let done = 0; done < rows; done += 100_000) {
          await pool.query(
            `INSERT INTO uploads (id, tenant_id, idempotency_key, workflow_id, storage_key, bytes, sha256, content_type, created_at)
             SELECT gen_random_uuid(), $1::uuid, 'bench-list-' || n, 'bench', 'bench/' || $1::text || '/' || n, n, repeat('a', 64),
                    'image/png', now() - (n || ' seconds')::interval
               FROM generate_series($2::int, $3::int) AS n`,
            [tenant.tenantId, done + 1, Math.min(rows, done + 100_000)],
          );
        }
        await pool.query('VACUUM ANALYZE uploads');
        // Cursors at random depths: the positions of random rows.
        const sample = await pool.query<{ c: string }>(
          `SELECT (extract(epoch FROM created_at) * 1000000)::bigint::text || '.' || id AS c FROM uploads
            WHERE tenant_id = $1 ORDER BY random() LIMIT $2`,
          [tenant.tenantId, opts.requests],
        );
        const api = await startOncelyProcess(services, 'api', { DATABASE_URL: databaseUrl });
        stacks.push({ rows, dbName, api, apiKey: tenant.apiKey, cursors: sample.rows.map((r) => Buffer.from(r.c).toString('base64url')) });
        await pool.query('CHECKPOINT');
      } finally {
        await pool.end();
      }
    }
    const list = async (s: (typeof stacks)[number], i: number) => {
      const cursor = i % 4 === 0 ? '' : `&cursor=${s.cursors[i % s.cursors.length]}`;
      const t = performance.now();
      const res = await fetch(`${s.api.url}/v1/uploads?limit=100${cursor}`, { headers: { authorization: `Bearer ${s.apiKey}` } });
      const body = (await res.json()) as { items: unknown[] };
      if (res.status !== 200 || body.items.length === 0) throw new Error(`list answered ${res.status}`);
      return performance.now() - t;
    };
    // Warm-up: each process's first requests of the kind (JIT, prepared statements, pool).
    for (const s of stacks) for (let i = 0; i < 50; i++) await list(s, i);
    const latencies = stacks.map(() => [] as number[]);
    for (let i = 0; i < opts.requests; i++) {
      // Alternating which goes first, so neither is always the one after an idle gap.
      const order = i % 2 === 0 ? stacks.map((_, k) => k) : stacks.map((_, k) => stacks.length - 1 - k);
      for (const k of order) latencies[k]!.push(await list(stacks[k]!, i));
    }
    stacks.forEach((s, k) => {
      out[`p50Ms_${s.rows}`] = round2(quantile(latencies[k]!, 0.5));
      out[`p99Ms_${s.rows}`] = round2(quantile(latencies[k]!, 0.99));
    });
    const [small, large] = opts.sizes;
    out.p99Ratio = round2(Number(out[`p99Ms_${large}`]) / Number(out[`p99Ms_${small}`]));
    out.p50Ratio = round2(Number(out[`p50Ms_${large}`]) / Number(out[`p50Ms_${small}`]));
    return out;
  } finally {
    for (const s of stacks) {
      await s.api.proc.stop();
      await dropDatabase(adminUrl, s.dbName);
    }
  }
}

/** Deletions per second and CPU per delete, beside new uploads' in the same run. */
export async function deleteRate(services: BenchServices, opts: { uploads: number; connections: number }) {
  const api = await startOncelyProcess(services, 'api');
  const worker = await startOncelyProcess(services, 'worker');
  const pids = { api: api.proc.child.pid, worker: worker.proc.child.pid, ...services.pids };
  const headers = { authorization: `Bearer ${services.apiKey}` };
  try {
    const ids: string[] = [];
    const t0 = performance.now();
    const uploadCpu = await measureCpu(pids, async () => {
      await Promise.all(
        Array.from({ length: opts.connections }, async () => {
          while (ids.length < opts.uploads) {
            const res = await fetch(`${api.url}/v1/uploads`, {
              method: 'POST',
              headers: { ...headers, 'idempotency-key': `bench-del-${randomUUID()}`, 'content-type': 'text/plain' },
              body: `bytes ${randomUUID()}`,
            });
            const json = (await res.json()) as { uploadId: string };
            if (res.status !== 201) throw new Error(`upload answered ${res.status}`);
            ids.push(json.uploadId);
          }
        }),
      );
      return ids.length;
    });
    const uploadSeconds = (performance.now() - t0) / 1000;
    let next = 0;
    const t1 = performance.now();
    const deleteCpu = await measureCpu(pids, async () => {
      await Promise.all(
        Array.from({ length: opts.connections }, async () => {
          while (next < ids.length) {
            const id = ids[next++]!;
            const res = await fetch(`${api.url}/v1/uploads/${id}`, { method: 'DELETE', headers: { ...headers, prefer: 'wait=60' } });
            await res.arrayBuffer();
            if (res.status !== 200) throw new Error(`delete answered ${res.status}`);
          }
        }),
      );
      return ids.length;
    });
    const deleteSeconds = (performance.now() - t1) / 1000;
    return {
      scenario: 'delete (DELETE /v1/uploads/{id}, erased within the wait)',
      uploads: ids.length,
      uploadsPerSecond: round1(ids.length / uploadSeconds),
      deletionsPerSecond: round1(ids.length / deleteSeconds),
      cpuMsPerUpload: JSON.stringify(uploadCpu),
      cpuMsPerDelete: JSON.stringify(deleteCpu),
      ratio: round2(deleteCpu.total / uploadCpu.total),
    };
  } finally {
    await api.proc.stop();
    await worker.proc.stop();
  }
}

const round1 = (n: number) => Math.round(n * 10) / 10;
const round2 = (n: number) => Math.round(n * 100) / 100;
