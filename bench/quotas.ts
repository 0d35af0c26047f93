// Scenario `quotas` (only when named: seeding takes minutes).
// 1. Admission cost: new 4 KiB uploads from two tenants of one API and worker, alternating
//    rounds: one without quotas (the baseline: one reservation statement) and one with all
//    three quotas set high enough never to refuse (a locked count per admission, a check-free
//    charge). Reported: CPU ms per committed upload per component and the ratio of totals.
// 2. The usage query: `usageRows` rows of usage_hours (a year of hours per tenant, tenants
//    enough to reach the count), seeded in SQL; then one tenant's month per day
//    (`GET /v1/usage?granularity=day`, 30 buckets) asked `requests` times. Baseline in the same
//    run: `GET /v1/quotas` for the same tenant (its standing: the same auth and pool path, a
//    handful of rows). Reported: p50/p95 and the p95 ratio.
import { performance } from 'node:perf_hooks';
import { createPool } from '../src/db/pool';
import { createTenant } from '../src/tenants';
import { createMigratedDatabase, dropDatabase } from '../test/support/postgres';
import { cpuMsPerOp, cpuSnapshot } from './lib/cpu';
import { httpLoad } from './lib/load';
import { adminUrl, startOncelyProcess, type BenchServices } from './lib/services';
import { quantile } from './lib/stats';

const round2 = (n: number) => Math.round(n * 100) / 100;
const BODY = Buffer.alloc(4096, 0x71);
const HOURS_PER_TENANT = 8760;

export async function byteQuotas(
  services: BenchServices,
  opts: { seconds: number; rounds: number; connections: number; usageRows: number; requests: number },
) {
  const out: Record<string, number | string> = { scenario: `byte quotas (admission; usage over ${opts.usageRows} rows)` };
  Object.assign(out, await admissionCost(services, opts));
  Object.assign(out, await usageQuery(services, opts));
  return out;
}

async function admissionCost(services: BenchServices, opts: { seconds: number; rounds: number; connections: number }) {
  const pool = createPool(services.databaseUrl, 2);
  const api = await startOncelyProcess(services, 'api');
  const worker = await startOncelyProcess(services, 'worker');
  try {
    const free = await createTenant(pool, 'bench-no-quota');
    const capped = await createTenant(pool, 'bench-quota');
    await pool.query(
      'UPDATE tenants SET max_stored_bytes = $2, max_ingress_bytes_per_month = $2, max_uploads_per_month = $3 WHERE id = $1',
      [capped.tenantId, 1e15, 1e12],
    );
    const pids = { api: api.proc.child.pid, worker: worker.proc.child.pid, ...services.pids };
    const totals = { free: [] as number[], capped: [] as number[] };
    const apiMs = { free: [] as number[], capped: [] as number[] };
    const pgMs = { free: [] as number[], capped: [] as number[] };
    const run = Date.now();
    // Round 0 warms both up (JIT, pools, the Temporal task queue) and is not counted.
    for (let i = 0; i <= opts.rounds; i++) {
      // Each round swaps which goes first: neither always runs on the other's leftovers.
      const order = [
        ['free', free],
        ['capped', capped],
      ] as const;
      for (const [name, tenant] of i % 2 ? order : [...order].reverse()) {
        const before = cpuSnapshot(pids);
        const r = await httpLoad({
          url: `${api.url}/v1/uploads`,
          method: 'POST',
          headers: {
            authorization: `Bearer ${tenant.apiKey}`,
            'content-type': 'application/octet-stream',
            'idempotency-key': `bench-quota-${name}-${run}-${i}-[<id>]`,
          },
          body: BODY,
          idReplacement: true,
          connections: opts.connections,
          duration: i === 0 ? 2 : opts.seconds,
        });
        if (i === 0) continue;
        const cost = cpuMsPerOp(before, cpuSnapshot(pids), r.statuses['201'] ?? 0);
        totals[name].push(cost.total);
        apiMs[name].push(cost.api);
        pgMs[name].push(cost.postgres);
      }
    }
    const median = (xs: number[]) => quantile(xs, 0.5);
    return {
      admissionCpuMsNoQuota: round2(median(totals.free)),
      admissionCpuMsWithQuota: round2(median(totals.capped)),
      admissionApiCpuMsNoQuota: round2(median(apiMs.free)),
      admissionApiCpuMsWithQuota: round2(median(apiMs.capped)),
      admissionPgCpuMsNoQuota: round2(median(pgMs.free)),
      admissionPgCpuMsWithQuota: round2(median(pgMs.capped)),
      admissionCpuRatio: round2(median(totals.capped) / median(totals.free)),
    };
  } finally {
    await api.proc.stop();
    await worker.proc.stop();
    await pool.end();
  }
}

async function usageQuery(services: BenchServices, opts: { usageRows: number; requests: number }) {
  const dbName = `oncely_bench_quotas_${process.pid}`;
  const databaseUrl = await createMigratedDatabase(adminUrl, dbName);
  const pool = createPool(databaseUrl, 2);
  let api: Awaited<ReturnType<typeof startOncelyProcess>> | undefined;
  try {
    const measured = await createTenant(pool, 'usage-bench');
    const tenants = Math.ceil(opts.usageRows / HOURS_PER_TENANT);
    const seedStart = performance.now();
    await pool.query(`INSERT INTO tenants (id, name) SELECT md5('t' || n)::uuid, 'bench-' || n FROM generate_series(2, $1::int) AS n`, [
      tenants,
    ]);
    // The measured tenant is one of them: a year of hours ending now, like every other.
    for (let first = 1; first <= tenants; first += 100) {
      const last = Math.min(tenants, first + 99);
      await pool.query(
        `INSERT INTO usage_hours (tenant_id, hour, uploads, ingress_bytes, stored_added, stored_released, egress_bytes)
         SELECT CASE WHEN n = 1 THEN $1::uuid ELSE md5('t' || n)::uuid END,
                date_trunc('hour', now()) - make_interval(hours => h), h % 7 + 1, (h % 13 + 1) * 4096, (h % 13 + 1) * 4096,
                (h % 5) * 4096, (h % 3) * 8192
           FROM generate_series($2::int, $3::int) AS n, generate_series(0, $4::int - 1) AS h`,
        [measured.tenantId, first, last, HOURS_PER_TENANT],
      );
    }
    await pool.query('VACUUM ANALYZE');
    const rows = (await pool.query<{ n: string }>('SELECT count(*) AS n FROM usage_hours')).rows[0]!.n;
    const seedSeconds = round2((performance.now() - seedStart) / 1000);
    api = await startOncelyProcess(services, 'api', { DATABASE_URL: databaseUrl });
    const auth = { authorization: `Bearer ${measured.apiKey}` };
    const month = new Date(Date.now() - 30 * 86_400_000).toISOString();
    const paths = { usage: `/v1/usage?granularity=day&from=${month}`, quotas: '/v1/quotas' };
    const times: Record<keyof typeof paths, number[]> = { usage: [], quotas: [] };
    for (let i = 0; i < opts.requests + 20; i++) {
      for (const name of ['usage', 'quotas'] as const) {
        const started = performance.now();
        const res = await fetch(`${api.url}${paths[name]}`, { headers: auth });
        await res.arrayBuffer();
        if (res.status !== 200) throw new Error(`${paths[name]} answered ${res.status}`);
        if (i >= 20) times[name].push(performance.now() - started);
      }
    }
    return {
      usageRows: Number(rows),
      usageSeedSeconds: seedSeconds,
      usageMonthP50ms: round2(quantile(times.usage, 0.5)),
      usageMonthP95ms: round2(quantile(times.usage, 0.95)),
      quotasP95ms: round2(quantile(times.quotas, 0.95)),
      usageP95OverQuotas: round2(quantile(times.usage, 0.95) / quantile(times.quotas, 0.95)),
    };
  } finally {
    await api?.proc.stop();
    await pool.end();
    await dropDatabase(adminUrl, dbName);
  }
}
