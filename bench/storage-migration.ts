// Scenario `migrate` (only when named: seeding takes minutes): moving uploads between two
// versitygw instances (their own ports, credentials and disks). Seeded: `small` uploads of 4 KiB
// and one of `largeBytes`, objects on the instance's store and rows in SQL; then a migration
// (POST /v1/storage-migrations, concurrency 16) moves them to a registered target, timed
// from the POST to `completed`. Baseline in the same run: the AWS SDK copying the same objects
// between the same two servers the way a careful user would (GetObject piped into lib-storage's
// Upload, 16 at a time; CopyObject cannot cross servers). Reported: objects/s and MiB/s for
// both and the migration's over the baseline's (goal ≥ 0.8).
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { PassThrough, Readable } from 'node:stream';
import { performance } from 'node:perf_hooks';
import path from 'node:path';
import getPort from 'get-port';
import { GetObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import { createPool } from '../src/db/pool';
import { keyStoragePrefix } from '../src/temporal/ids';
import { startVersity, versityBucket } from '../test/support/versitygw';
import { startOncelyProcess, type BenchServices } from './lib/services';

const MiB = 1024 * 1024;
const round2 = (n: number) => Math.round(n * 100) / 100;

async function inParallel<T>(items: T[], width: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < items.length) await fn(items[next++]!);
    }),
  );
}

export async function storageMigration(services: BenchServices, opts: { small: number; largeBytes: number }) {
  const out: Record<string, number | string> = {
    scenario: `storage migration (${opts.small} × 4 KiB, 1 × ${round2(opts.largeBytes / MiB)} MiB)`,
  };
  const creds = { accessKeyId: 'bench-target', secretAccessKey: `bench-target-${randomUUID()}` };
  const target = await startVersity({ port: await getPort({ host: '127.0.0.1' }), dir: path.join(services.dir, 'target'), ...creds });
  const source = await versityBucket(services.s3, services.s3.bucket, 8 * MiB);
  const targetStore = await versityBucket({ endpoint: target.endpoint, ...creds }, 'moved', 8 * MiB);
  const pool = createPool(services.databaseUrl, 4);
  let api: Awaited<ReturnType<typeof startOncelyProcess>> | undefined;
  try {
    // Seeding: the objects, then their rows.
    const seeded: { key: string; bytes: number; sha256: string; idempotencyKey: string }[] = [];
    const seedStart = performance.now();
    const smalls = Array.from({ length: opts.small }, (_, i) => i);
    await inParallel(smalls, 32, async (i) => {
      const body = randomBytes(4096);
      const idempotencyKey = `migrate-bench-${i}-${randomUUID()}`;
      const key = `${keyStoragePrefix(services.tenantId, idempotencyKey)}${randomUUID()}`;
      await source.put(key, Readable.from([body]), { contentType: 'application/octet-stream', contentLength: body.length });
      seeded.push({ key, bytes: body.length, sha256: createHash('sha256').update(body).digest('hex'), idempotencyKey });
    });
    const largeKey = `migrate-bench-large-${randomUUID()}`;
    const large = {
      key: `${keyStoragePrefix(services.tenantId, largeKey)}${randomUUID()}`,
      bytes: opts.largeBytes,
      sha256: '',
      idempotencyKey: largeKey,
    };
    const hash = createHash('sha256');
    const chunk = randomBytes(MiB);
    const body = Readable.from(
      (function* () {
        for (let sent = 0; sent < opts.largeBytes; sent += MiB) {
          const part = chunk.subarray(0, Math.min(MiB, opts.largeBytes - sent));
          hash.update(part);
          yield part;
        }
      })(),
    );
    await source.put(large.key, body, { contentType: 'application/octet-stream', contentLength: opts.largeBytes });
    large.sha256 = hash.digest('hex');
    seeded.push(large);
    for (let i = 0; i < seeded.length; i += 1000) {
      const rows = seeded.slice(i, i + 1000);
      await pool.query(
        `INSERT INTO uploads (id, tenant_id, idempotency_key, workflow_id, storage_key, bytes, sha256, content_type)
         SELECT gen_random_uuid(), $1, x.k, 'bench', x.s, x.b, x.h, 'application/octet-stream'
           FROM jsonb_to_recordset($2::jsonb) AS x(k text, s text, b bigint, h text)`,
        [services.tenantId, JSON.stringify(rows.map((r) => ({ k: r.idempotencyKey, s: r.key, b: r.bytes, h: r.sha256 })))],
      );
    }
    out.seedSeconds = round2((performance.now() - seedStart) / 1000);

    // Baseline: the SDK, the same objects between the same two servers.
    const from = new S3Client({
      endpoint: services.s3.endpoint,
      region: 'us-east-1',
      forcePathStyle: true,
      credentials: { accessKeyId: services.s3.accessKeyId, secretAccessKey: services.s3.secretAccessKey },
    });
    // The SDK marks the credentials object it is given: it gets a copy.
    const to = new S3Client({ endpoint: target.endpoint, region: 'us-east-1', forcePathStyle: true, credentials: { ...creds } });
    const sdkCopy = async (o: { key: string }) => {
      const got = await from.send(new GetObjectCommand({ Bucket: services.s3.bucket, Key: o.key }));
      const pass = new PassThrough();
      (got.Body as Readable).pipe(pass);
      await new Upload({
        client: to,
        params: { Bucket: 'moved', Key: `sdk/${o.key}`, Body: pass },
        partSize: 8 * MiB,
        queueSize: 4,
      }).done();
    };
    let t = performance.now();
    await inParallel(seeded.slice(0, -1), 16, sdkCopy);
    const sdkSmallSeconds = (performance.now() - t) / 1000;
    t = performance.now();
    await sdkCopy(large);
    const sdkLargeSeconds = (performance.now() - t) / 1000;

    // Oncely: a migration of the small ones, then one of the large one (a filter apart: by creation time).
    api = await startOncelyProcess(services, 'all', {
      STORAGE_TARGET_ALLOW_PRIVATE_NETWORKS: 'true',
      STORAGE_MIGRATION_SOURCE_GRACE_SECONDS: '3600',
    });
    const call = async (method: string, route: string, json?: unknown) => {
      const res = await fetch(`${api!.url}${route}`, {
        method,
        headers: { authorization: `Bearer ${services.apiKey}`, 'content-type': 'application/json', 'idempotency-key': randomUUID() },
        body: json === undefined ? undefined : JSON.stringify(json),
      });
      const text = await res.text();
      if (res.status >= 300) throw new Error(`${method} ${route}: ${res.status} ${text}`);
      return JSON.parse(text) as any;
    };
    await call('POST', '/v1/storage-targets', { name: 'bench', endpoint: target.endpoint, bucket: 'moved', prefix: 'oncely/', ...creds });
    await pool.query(`UPDATE uploads SET created_at = now() - interval '1 hour' WHERE storage_key = $1`, [large.key]);
    const timed = async (filter: Record<string, string>) => {
      const start = performance.now();
      const m = await call('POST', '/v1/storage-migrations', { from: 'default', to: 'bench', concurrency: 16, filter });
      for (const deadline = Date.now() + 3_600_000; Date.now() < deadline;) {
        const now = await call('GET', `/v1/storage-migrations/${m.id}`);
        if (now.state === 'completed')
          return { seconds: (performance.now() - start) / 1000, moved: now.moved as number, failed: now.failed as number };
        await new Promise((r) => setTimeout(r, 100));
      }
      throw new Error(`migration ${m.id} did not complete within an hour`);
    };
    const cutoff = new Date(Date.now() - 30 * 60_000).toISOString();
    const smallRun = await timed({ createdAfter: cutoff });
    const largeRun = await timed({ createdBefore: cutoff });
    if (smallRun.moved !== opts.small || largeRun.moved !== 1 || smallRun.failed + largeRun.failed > 0)
      throw new Error(`the migration moved ${smallRun.moved} + ${largeRun.moved} (failed ${smallRun.failed + largeRun.failed})`);
    out.sdkSmallObjectsPerSecond = round2(opts.small / sdkSmallSeconds);
    out.migrationSmallObjectsPerSecond = round2(opts.small / smallRun.seconds);
    out.smallRatio = round2(sdkSmallSeconds / smallRun.seconds);
    out.sdkLargeMiBs = round2(opts.largeBytes / MiB / sdkLargeSeconds);
    out.migrationLargeMiBs = round2(opts.largeBytes / MiB / largeRun.seconds);
    out.largeRatio = round2(sdkLargeSeconds / largeRun.seconds);
    return out;
  } finally {
    await api?.proc.stop();
    await pool.end();
    source.destroy();
    targetStore.destroy();
    await target.stop();
  }
}
