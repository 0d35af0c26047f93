// Scenario `console`: the console's pages with a large tenant. One tenant with `uploads`
// uploads (1,000,000 by default) and `events` events (5,000,000: five per upload, 1 % of them
// with a failed delivery), seeded in SQL; then, signed in, each page is asked `requests` times
// in turn: the uploads list, a filtered list (file name prefix and type), an upload's page (its
// events and their attempts) and the event log (failed first). Baseline in the same run: the
// API's own JSON list (`GET /v1/uploads?limit=50`), which the uploads page renders. Reported:
// p50/p95 per page (client-side on loopback: the server's time plus the socket) and each
// page's p95 over the baseline's.
import { createHash } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { createPool } from '../src/db/pool';
import { createTenant } from '../src/tenants';
import { createMigratedDatabase, dropDatabase } from '../test/support/postgres';
import { adminUrl, startOncelyProcess, type BenchServices } from './lib/services';
import { quantile } from './lib/stats';

const round2 = (n: number) => Math.round(n * 100) / 100;

export async function consolePages(services: BenchServices, opts: { uploads: number; events: number; requests: number }) {
  const out: Record<string, number | string> = { scenario: `console (${opts.uploads} uploads, ${opts.events} events)` };
  const dbName = `oncely_bench_console_${process.pid}`;
  const databaseUrl = await createMigratedDatabase(adminUrl, dbName);
  const pool = createPool(databaseUrl, 2);
  let api: Awaited<ReturnType<typeof startOncelyProcess>> | undefined;
  try {
    const tenant = await createTenant(pool, 'console-bench');
    const endpoint = '00000000-0000-4000-8000-00000000e001';
    await pool.query(`INSERT INTO webhook_endpoints (id, tenant_id, url, secret) VALUES ($1, $2, 'http://127.0.0.1:9/hook', 'x')`, [
      endpoint,
      tenant.tenantId,
    ]);
    const seedStart = performance.now();
    const perUpload = Math.max(1, Math.round(opts.events / opts.uploads));
    for (let done = 0; done < opts.uploads; done += 50_000) {
      const [from, to] = [done + 1, Math.min(opts.uploads, done + 50_000)];
      await pool.query(
        `INSERT INTO uploads (id, tenant_id, idempotency_key, workflow_id, storage_key, bytes, sha256, content_type, file_name, created_at)
         SELECT md5('u' || n)::uuid, $1::uuid, 'bench-' || n, 'bench', 'bench/' || n, n, repeat('a', 64),
                CASE WHEN n % 3 = 0 THEN 'image/png' ELSE 'text/plain' END,
                (ARRAY['invoice', 'photo', 'report', 'scan'])[1 + n % 4] || '-' || n || CASE WHEN n % 3 = 0 THEN '.png' ELSE '.txt' END,
                now() - (n || ' seconds')::interval
           FROM generate_series($2::int, $3::int) AS n`,
        [tenant.tenantId, from, to],
      );
      await pool.query(
        `INSERT INTO webhook_events (id, tenant_id, upload_id, type, payload, created_at)
         SELECT 'evt_' || n || '_' || k, $1::uuid, md5('u' || n)::uuid, 'upload.step' || k, '{}', now() - (n || ' seconds')::interval + (k || ' ms')::interval
           FROM generate_series($2::int, $3::int) AS n, generate_series(1, $4::int) AS k`,
        [tenant.tenantId, from, to, perUpload],
      );
      await pool.query(
        `INSERT INTO webhook_deliveries (event_id, endpoint_id, tenant_id, upload_id, event_type, attempts, last_status, delivered_at, created_at)
         SELECT 'evt_' || n || '_' || k, $5::uuid, $1::uuid, md5('u' || n)::uuid, 'upload.step' || k, 1,
                CASE WHEN (n * 7 + k) % 100 = 0 THEN 500 ELSE 200 END,
                CASE WHEN (n * 7 + k) % 100 = 0 THEN NULL ELSE now() END, now() - (n || ' seconds')::interval
           FROM generate_series($2::int, $3::int) AS n, generate_series(1, $4::int) AS k`,
        [tenant.tenantId, from, to, perUpload, endpoint],
      );
    }
    await pool.query('VACUUM ANALYZE');
    out.seedSeconds = round2((performance.now() - seedStart) / 1000);
    api = await startOncelyProcess(services, 'api', { DATABASE_URL: databaseUrl });
    const signIn = await fetch(`${api.url}/console/sign-in`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', origin: api.url },
      body: new URLSearchParams({ secret: tenant.apiKey }),
      redirect: 'manual',
    });
    if (signIn.status !== 303) throw new Error(`sign-in answered ${signIn.status}`);
    const cookie = signIn.headers.get('set-cookie')!.split(';')[0]!;
    const pick = (i: number) => 1 + ((i * 7919) % opts.uploads);
    const pages: Record<string, (i: number) => [string, Record<string, string>]> = {
      apiList: () => ['/v1/uploads?limit=50', { authorization: `Bearer ${tenant.apiKey}` }],
      uploads: () => ['/console/uploads', { cookie }],
      filtered: (i) => [
        `/console/uploads?name=${['invoice', 'photo', 'report', 'scan'][i % 4]}-${1 + (i % 9)}&contentType=image/*`,
        { cookie },
      ],
      upload: (i) => [`/console/uploads/${uuidOf(pick(i))}`, { cookie }],
      events: () => ['/console/events', { cookie }],
    };
    const time = async (name: string, i: number) => {
      const [path, headers] = pages[name]!(i);
      const t = performance.now();
      const res = await fetch(`${api!.url}${path}`, { headers });
      await res.arrayBuffer();
      if (res.status !== 200) throw new Error(`${name} ${path} answered ${res.status}`);
      return performance.now() - t;
    };
    for (const name of Object.keys(pages)) for (let i = 0; i < 20; i++) await time(name, i); // warm-up
    const latencies: Record<string, number[]> = Object.fromEntries(Object.keys(pages).map((n) => [n, []]));
    for (let i = 0; i < opts.requests; i++) for (const name of Object.keys(pages)) latencies[name]!.push(await time(name, i));
    for (const [name, l] of Object.entries(latencies)) {
      out[`${name}P50Ms`] = round2(quantile(l, 0.5));
      out[`${name}P95Ms`] = round2(quantile(l, 0.95));
    }
    for (const name of ['uploads', 'filtered', 'upload', 'events'])
      out[`${name}P95VsApiList`] = round2(Number(out[`${name}P95Ms`]) / Number(out.apiListP95Ms));
    return out;
  } finally {
    await api?.proc.stop();
    await pool.end();
    await dropDatabase(adminUrl, dbName);
  }
}

/** The seeded upload n's id (md5('u' || n) as a uuid, as the seed makes it). */
function uuidOf(n: number): string {
  const h = createHash('md5').update(`u${n}`).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}
