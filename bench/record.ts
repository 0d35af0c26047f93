// Scenario `record`: the upload list filtered by the record's labels with a large tenant.
// One tenant with `uploads` uploads (1,000,000 by default), each with metadata
// {album: a0..a99, rank: 0..999} and tags (`t0`..`t49`, `common` on every other one, `rare`
// on one in 1,000), seeded in SQL with their label index; then each filtered page
// (`limit=50`) is asked `requests` times in turn. Baseline in the same run: the unfiltered
// page (`GET /v1/uploads?limit=50`). Reported: p50/p95 per filter (client-side on loopback)
// and each one's p95 over the baseline's. `disjoint` names two labels no upload has both of
// (the walk's worst case: the rarer label's whole range).
import { performance } from 'node:perf_hooks';
import { createPool } from '../src/db/pool';
import { createTenant } from '../src/tenants';
import { createMigratedDatabase, dropDatabase } from '../test/support/postgres';
import { adminUrl, startOncelyProcess, type BenchServices } from './lib/services';
import { quantile } from './lib/stats';

const round2 = (n: number) => Math.round(n * 100) / 100;

export async function recordFilters(services: BenchServices, opts: { uploads: number; requests: number }) {
  const out: Record<string, number | string> = { scenario: `record filters (${opts.uploads} uploads)` };
  const dbName = `oncely_bench_record_${process.pid}`;
  const databaseUrl = await createMigratedDatabase(adminUrl, dbName);
  const pool = createPool(databaseUrl, 2);
  let api: Awaited<ReturnType<typeof startOncelyProcess>> | undefined;
  try {
    const tenant = await createTenant(pool, 'record-bench');
    const seedStart = performance.now();
    for (let done = 0; done < opts.uploads; done += 50_000) {
      const [from, to] = [done + 1, Math.min(opts.uploads, done + 50_000)];
      await pool.query(
        `INSERT INTO uploads (id, tenant_id, idempotency_key, workflow_id, storage_key, bytes, sha256, content_type, created_at, metadata, tags)
         SELECT md5('u' || n)::uuid, $1::uuid, 'bench-' || n, 'bench', 'bench/' || n, n, repeat('a', 64), 'text/plain',
                now() - (n || ' seconds')::interval,
                jsonb_build_object('album', 'a' || n % 100, 'rank', n % 1000),
                array_remove(ARRAY['t' || n % 50, CASE WHEN n % 2 = 0 THEN 'common' END, CASE WHEN n % 1000 = 0 THEN 'rare' END], NULL)
           FROM generate_series($2::int, $3::int) AS n`,
        [tenant.tenantId, from, to],
      );
      await pool.query(
        `INSERT INTO upload_labels (tenant_id, label, created_at, upload_id)
         SELECT u.tenant_id, l.label, u.created_at, u.id
           FROM generate_series($2::int, $3::int) AS n
           JOIN uploads u ON u.id = md5('u' || n)::uuid AND u.tenant_id = $1,
           LATERAL (
             SELECT 't:' || t AS label FROM unnest(u.tags) t
             UNION ALL SELECT 'm:album=' || (u.metadata->>'album')
             UNION ALL SELECT 'm:rank=' || (u.metadata->>'rank')) l`,
        [tenant.tenantId, from, to],
      );
    }
    await pool.query('VACUUM ANALYZE');
    out.seedSeconds = round2((performance.now() - seedStart) / 1000);
    api = await startOncelyProcess(services, 'api', { DATABASE_URL: databaseUrl });
    const auth = { authorization: `Bearer ${tenant.apiKey}` };
    const filters: Record<string, (i: number) => string> = {
      unfiltered: () => '',
      tagCommon: () => 'tag=common',
      tagRare: () => 'tag=rare',
      tagOne: (i) => `tag=t${i % 50}`,
      metadata: (i) => `metadata%5Balbum%5D=a${i % 100}`,
      metadataRank: (i) => `metadata%5Brank%5D=${i % 1000}`,
      combined: (i) => `tag=common&metadata%5Balbum%5D=a${(i % 50) * 2}`,
      disjoint: (i) => `tag=common&metadata%5Balbum%5D=a${(i % 50) * 2 + 1}`,
    };
    const time = async (name: string, i: number) => {
      const q = filters[name]!(i);
      const t = performance.now();
      const res = await fetch(`${api!.url}/v1/uploads?limit=50${q ? `&${q}` : ''}`, { headers: auth });
      const body = (await res.json()) as { items?: unknown[] };
      if (res.status !== 200) throw new Error(`${name} ${q} answered ${res.status}`);
      if (name !== 'disjoint' && body.items?.length !== 50) throw new Error(`${name} ${q} answered ${body.items?.length} items`);
      return performance.now() - t;
    };
    for (const name of Object.keys(filters)) for (let i = 0; i < 20; i++) await time(name, i); // warm-up
    const latencies: Record<string, number[]> = Object.fromEntries(Object.keys(filters).map((n) => [n, []]));
    for (let i = 0; i < opts.requests; i++) for (const name of Object.keys(filters)) latencies[name]!.push(await time(name, i));
    for (const [name, l] of Object.entries(latencies)) {
      out[`${name}P50Ms`] = round2(quantile(l, 0.5));
      out[`${name}P95Ms`] = round2(quantile(l, 0.95));
    }
    for (const name of Object.keys(filters).filter((n) => n !== 'unfiltered'))
      out[`${name}P95VsUnfiltered`] = round2(Number(out[`${name}P95Ms`]) / Number(out.unfilteredP95Ms));
    return out;
  } finally {
    await api?.proc.stop();
    await pool.end();
    await dropDatabase(adminUrl, dbName);
  }
}
