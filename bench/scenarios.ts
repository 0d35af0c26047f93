// Scenarios 2-4: replay path, new small uploads, duplicate storm. Each runs Oncely and its
// baseline alternately on the same services and reports medians over rounds.
import { createHash, randomUUID } from 'node:crypto';
import http from 'node:http';
import path from 'node:path';
import { readFileSync } from 'node:fs';
import { Client, Connection, WithStartWorkflowOperation } from '@temporalio/client';
import { NativeConnection, Worker } from '@temporalio/worker';
import getPort from 'get-port';
import sharp from 'sharp';
import { createPool } from '../src/db/pool';
import { createTenant } from '../src/tenants';
import { nodeTs, startProcess, waitUntil, type ManagedProcess } from '../src/devstack/process';
import { uploadWorkflowId } from '../src/temporal/ids';
import { cpuMsPerOp, cpuSnapshot, measureCpu, medianCpu } from './lib/cpu';
import { closedLoop, httpLoad, type LoadResult } from './lib/load';
import { startOncelyProcess, type BenchServices } from './lib/services';
import { median } from './lib/stats';
import { noopOffer } from './baselines/noop-workflow';

const BODY = Buffer.alloc(4096, 0x61);
const BODY_SHA = createHash('sha256').update(BODY).digest('hex');

async function startBaseline(services: BenchServices, file: string): Promise<{ proc: ManagedProcess; url: string }> {
  const port = await getPort({ host: '127.0.0.1' });
  const logFile = path.join(services.dir, `${path.basename(file)}.log`);
  const proc = startProcess(...nodeTs(path.join(import.meta.dirname, 'baselines', file)), {
    logFile,
    env: { ...process.env, ...services.env, PORT: String(port) },
  });
  await waitUntil(file, async () => readFileSync(logFile, 'utf8').includes('listening'), { proc, timeoutMs: 30_000 });
  return { proc, url: `http://127.0.0.1:${port}` };
}

function tenantIdOf(services: BenchServices): string {
  return services.tenantId;
}

function uploadHeaders(services: BenchServices, key: string) {
  return {
    authorization: `Bearer ${services.apiKey}`,
    'idempotency-key': key,
    'content-type': 'application/octet-stream',
    'x-file-sha256': BODY_SHA,
  };
}

const pick = (runs: LoadResult[]) => ({
  rps: median(runs.map((r) => r.rps)),
  p50ms: median(runs.map((r) => r.p50ms)),
  p99ms: median(runs.map((r) => r.p99ms)),
  statuses: runs.at(-1)!.statuses,
});

export async function replayPath(services: BenchServices, opts: { seconds: number; rounds: number; connections: number }) {
  const api = await startOncelyProcess(services, 'api');
  // The same API with its replay-answer cache off: every replay reads the key row.
  const uncached = await startOncelyProcess(services, 'api', { REPLAY_CACHE_MIB: '0' });
  const worker = await startOncelyProcess(services, 'worker');
  const bare = await startBaseline(services, 'bare-select-server.ts');
  const dbos = await startBaseline(services, 'dbos-server.ts');
  try {
    const key = `bench-replay-${randomUUID()}`;
    const first = await fetch(`${api.url}/v1/uploads`, { method: 'POST', headers: uploadHeaders(services, key), body: BODY });
    if (first.status !== 201) throw new Error(`setup upload failed: ${first.status} ${await first.text()}`);
    const dbosFirst = await fetch(`${dbos.url}/uploads`, { method: 'POST', headers: uploadHeaders(services, key), body: BODY });
    if (dbosFirst.status !== 201) throw new Error(`DBOS setup upload failed: ${dbosFirst.status} ${await dbosFirst.text()}`);
    const oncely: LoadResult[] = [];
    const oncelyUncached: LoadResult[] = [];
    const baseline: LoadResult[] = [];
    const durable: LoadResult[] = [];
    const cpu: Record<string, number>[] = [];
    const pids = { api: api.proc.child.pid, worker: worker.proc.child.pid, ...services.pids };
    // The same completed key's request, replayed against one API for a load phase.
    const replays = (url: string) =>
      httpLoad({
        url: `${url}/v1/uploads`,
        method: 'POST',
        headers: uploadHeaders(services, key),
        body: BODY,
        connections: opts.connections,
        duration: opts.seconds,
      });
    for (let i = 0; i < opts.rounds; i++) {
      cpu.push(
        await measureCpu(pids, async () => {
          oncely.push(await replays(api.url));
          return oncely.at(-1)!.statuses['201'] ?? 0;
        }),
      );
      oncelyUncached.push(await replays(uncached.url));
      baseline.push(
        await httpLoad({
          url: `${bare.url}/replay/${tenantIdOf(services)}/${key}`,
          method: 'POST',
          headers: { 'content-type': 'application/octet-stream' },
          body: BODY,
          connections: opts.connections,
          duration: opts.seconds,
        }),
      );
      durable.push(
        await httpLoad({
          url: `${dbos.url}/uploads`,
          method: 'POST',
          headers: uploadHeaders(services, key),
          body: BODY,
          connections: opts.connections,
          duration: opts.seconds,
        }),
      );
    }
    const o = pick(oncely);
    const u = pick(oncelyUncached);
    const b = pick(baseline);
    const d = pick(durable);
    for (const r of [o, u, d])
      if (Object.keys(r.statuses).some((s) => s !== '201')) throw new Error(`replay answered ${JSON.stringify(r.statuses)}`);
    return {
      scenario: 'replay path',
      oncelyRps: o.rps,
      baselineRps: b.rps,
      ratio: round2(o.rps / b.rps),
      cpuMsPerRequest: JSON.stringify(medianCpu(cpu)),
      oncelyP50ms: o.p50ms,
      oncelyP99ms: o.p99ms,
      baselineP50ms: b.p50ms,
      baselineP99ms: b.p99ms,
      uncachedRps: u.rps,
      ratioUncached: round2(u.rps / b.rps),
      uncachedP50ms: u.p50ms,
      uncachedP99ms: u.p99ms,
      durableRps: d.rps,
      durableP50ms: d.p50ms,
      durableP99ms: d.p99ms,
      ratioVsDurable: round2(o.rps / d.rps),
    };
  } finally {
    await Promise.all([api.proc.stop(), uncached.proc.stop(), worker.proc.stop(), bare.proc.stop(), dbos.proc.stop()]);
  }
}

export async function newSmallUploads(services: BenchServices, opts: { seconds: number; rounds: number; connections: number }) {
  const api = await startOncelyProcess(services, 'api');
  const worker = await startOncelyProcess(services, 'worker');
  const pgOnly = await startBaseline(services, 'pg-only-server.ts');
  const dbos = await startBaseline(services, 'dbos-server.ts');
  const native = await NativeConnection.connect({ address: services.temporalAddress });
  const noopWorker = await Worker.create({
    connection: native,
    taskQueue: 'bench-noop',
    workflowsPath: path.join(import.meta.dirname, 'baselines', 'noop-workflow.ts'),
  });
  const noopRun = noopWorker.run();
  const connection = await Connection.connect({ address: services.temporalAddress });
  const client = new Client({ connection });
  try {
    const oncely: LoadResult[] = [];
    const temporal: LoadResult[] = [];
    const updateWithStart: LoadResult[] = [];
    const pg: LoadResult[] = [];
    const durable: LoadResult[] = [];
    const run = `${Date.now()}`;
    const pids = { api: api.proc.child.pid, worker: worker.proc.child.pid, ...services.pids };
    const cpu: ReturnType<typeof cpuMsPerOp>[] = [];
    const durableCpu: ReturnType<typeof cpuMsPerOp>[] = [];
    // The DBOS process counts as its "api" (it is the whole application).
    const durablePids = { api: dbos.proc.child.pid, s3: services.pids.s3 };
    for (let i = 0; i < opts.rounds; i++) {
      const before = cpuSnapshot(pids);
      oncely.push(
        await httpLoad({
          url: `${api.url}/v1/uploads`,
          method: 'POST',
          headers: uploadHeaders(services, `bench-small-${run}-${i}-[<id>]`),
          body: BODY,
          idReplacement: true,
          connections: opts.connections,
          duration: opts.seconds,
        }),
      );
      // CPU per completed new upload, per component, over this round's load phase.
      cpu.push(cpuMsPerOp(before, cpuSnapshot(pids), oncely.at(-1)!.statuses['201'] ?? 0));
      temporal.push(
        await closedLoop(opts.connections, opts.seconds, async () => {
          await client.workflow.execute('noopWorkflow', { taskQueue: 'bench-noop', workflowId: `noop-${randomUUID()}` });
        }),
      );
      // The floor under an Oncely upload: start, one update accepted and answered, one task, completion.
      updateWithStart.push(
        await closedLoop(opts.connections, opts.seconds, async () => {
          await client.workflow.executeUpdateWithStart(noopOffer, {
            args: ['ok'],
            startWorkflowOperation: new WithStartWorkflowOperation('noopUpdateWorkflow', {
              taskQueue: 'bench-noop',
              workflowId: `noop-update-${randomUUID()}`,
              workflowIdConflictPolicy: 'USE_EXISTING',
            }),
          });
        }),
      );
      pg.push(
        await httpLoad({
          url: `${pgOnly.url}/uploads`,
          method: 'POST',
          headers: { 'idempotency-key': `bench-pg-${run}-${i}-[<id>]`, 'content-type': 'application/octet-stream' },
          body: BODY,
          idReplacement: true,
          connections: opts.connections,
          duration: opts.seconds,
        }),
      );
      const beforeDurable = cpuSnapshot(durablePids);
      durable.push(
        await httpLoad({
          url: `${dbos.url}/uploads`,
          method: 'POST',
          headers: uploadHeaders(services, `bench-dbos-${run}-${i}-[<id>]`),
          body: BODY,
          idReplacement: true,
          connections: opts.connections,
          duration: opts.seconds,
        }),
      );
      durableCpu.push(cpuMsPerOp(beforeDurable, cpuSnapshot(durablePids), durable.at(-1)!.statuses['201'] ?? 0));
    }
    const o = pick(oncely);
    const t = pick(temporal);
    const u = pick(updateWithStart);
    const p = pick(pg);
    const d = pick(durable);
    const own = median(cpu.map((c) => c.api + c.worker));
    const durableApp = median(durableCpu.map((c) => c.api));
    return {
      scenario: 'new small uploads (4 KiB)',
      oncelyRps: o.rps,
      // Median per component over the rounds (ms of CPU per new upload).
      cpuMsPerUpload: JSON.stringify(medianCpu(cpu)),
      // What the orchestration costs: #25's target is ≤ 20 ms here.
      apiWorkerTemporalMsPerUpload: median(cpu.map((c) => Math.round((c.api + c.worker + c.temporal) * 10) / 10)),
      oncelyP50ms: o.p50ms,
      oncelyP99ms: o.p99ms,
      oncelyStatuses: JSON.stringify(o.statuses),
      bareTemporalRps: t.rps,
      bareTemporalP50ms: t.p50ms,
      bareTemporalP99ms: t.p99ms,
      ratioVsBareTemporal: round2(o.rps / t.rps),
      bareUpdateWithStartRps: u.rps,
      bareUpdateWithStartP50ms: u.p50ms,
      // #42's targets: ≥ 0.85 here, and ≤ 1.5 for ownCpuVsDurable below.
      ratioVsBareUpdateWithStart: round2(o.rps / u.rps),
      pgOnlyRps: p.rps,
      pgOnlyP50ms: p.p50ms,
      pgOnlyP99ms: p.p99ms,
      ratioVsPgOnly: round2(o.rps / p.rps),
      // DBOS Transact: the same endpoint as a durable workflow on Postgres (bench/baselines/dbos-server.ts).
      durableRps: d.rps,
      durableP50ms: d.p50ms,
      durableP99ms: d.p99ms,
      durableCpuMsPerUpload: JSON.stringify(medianCpu(durableCpu)),
      ratioVsDurable: round2(o.rps / d.rps),
      // Oncely's own processes (API + worker) per new upload over the DBOS peer's whole app.
      ownCpuMsPerUpload: Math.round(own * 10) / 10,
      durableAppCpuMsPerUpload: Math.round(durableApp * 10) / 10,
      ownCpuVsDurable: round2(own / durableApp),
    };
  } finally {
    noopWorker.shutdown();
    await noopRun;
    await native.close();
    await connection.close();
    await Promise.all([api.proc.stop(), worker.proc.stop(), pgOnly.proc.stop(), dbos.proc.stop()]);
  }
}

export async function duplicateStorm(services: BenchServices, opts: { requests: number }) {
  const api = await startOncelyProcess(services, 'api');
  const worker = await startOncelyProcess(services, 'worker');
  const connection = await Connection.connect({ address: services.temporalAddress });
  const client = new Client({ connection });
  try {
    const key = `bench-storm-${randomUUID()}`;
    const started = performance.now();
    let statuses: string[] = [];
    const cpu = await measureCpu({ api: api.proc.child.pid, worker: worker.proc.child.pid, ...services.pids }, async () => {
      statuses = await Promise.all(
        Array.from({ length: opts.requests }, async () => {
          const res = await fetch(`${api.url}/v1/uploads`, { method: 'POST', headers: uploadHeaders(services, key), body: BODY });
          await res.arrayBuffer();
          return res.headers.get('idempotent-replayed') ? `${res.status} replayed` : String(res.status);
        }),
      );
      return opts.requests;
    });
    const ms = performance.now() - started;
    const mix: Record<string, number> = {};
    for (const s of statuses) mix[s] = (mix[s] ?? 0) + 1;
    let executions = 0;
    for await (const _ of client.workflow.list({ query: `WorkflowId = '${uploadWorkflowId(tenantIdOf(services), key)}'` })) executions++;
    return {
      scenario: `duplicate storm (${opts.requests} × one key)`,
      allAnsweredMs: Math.round(ms),
      executions,
      answers: JSON.stringify(mix),
      cpuMsPerRequest: JSON.stringify(cpu),
    };
  } finally {
    await connection.close();
    await Promise.all([api.proc.stop(), worker.proc.stop()]);
  }
}

const round2 = (n: number) => Math.round(n * 100) / 100;

/**
 * New uploads with downstream work (#25's second case): a small PNG from a tenant with one
 * webhook endpoint, so each upload runs the default pipeline's image step and sends
 * upload.completed and upload.processed. CPU per upload by component counts everything until
 * the last upload is processed and every event has reached the receiver.
 */
export async function newPngUploads(services: BenchServices, opts: { seconds: number; rounds: number; connections: number }) {
  // The receiver is on loopback: allowed for this run.
  const env = { WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true' };
  const api = await startOncelyProcess(services, 'api', env);
  const worker = await startOncelyProcess(services, 'worker', env);
  let received = 0;
  const receiver = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      received++;
      res.end('ok');
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  const pool = createPool(services.databaseUrl, 1);
  try {
    const tenant = await createTenant(pool, 'bench-png');
    const endpoint = await fetch(`${api.url}/v1/webhook-endpoints`, {
      method: 'POST',
      headers: { authorization: `Bearer ${tenant.apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ url: `http://127.0.0.1:${(receiver.address() as { port: number }).port}/hook` }),
    });
    if (endpoint.status !== 201) throw new Error(`webhook endpoint answered ${endpoint.status}`);
    const png = await sharp({ create: { width: 64, height: 48, channels: 3, background: { r: 200, g: 80, b: 40 } } })
      .png()
      .toBuffer();
    const pids = { api: api.proc.child.pid, worker: worker.proc.child.pid, ...services.pids };
    const rounds: { load: LoadResult; cpu: ReturnType<typeof cpuMsPerOp>; drainMs: number }[] = [];
    const run = `${Date.now()}`;
    for (let i = 0; i < opts.rounds; i++) {
      const before = cpuSnapshot(pids);
      const receivedBefore = received;
      // A closed loop of fetches: autocannon's id replacement would rewrite the binary body.
      const load = await closedLoop(opts.connections, opts.seconds, async (n) => {
        const res = await fetch(`${api.url}/v1/uploads`, {
          method: 'POST',
          headers: {
            authorization: `Bearer ${tenant.apiKey}`,
            'idempotency-key': `bench-png-${run}-${i}-${n}`,
            'content-type': 'image/png',
          },
          body: png,
        });
        await res.arrayBuffer();
        return res.status;
      });
      const created = load.statuses['201'] ?? 0;
      // Drained: every upload processed and both of its events delivered (bounded).
      const drainStart = performance.now();
      for (;;) {
        const pending = await pool.query("SELECT count(*)::int AS n FROM uploads WHERE tenant_id = $1 AND status <> 'processed'", [
          tenant.tenantId,
        ]);
        if (pending.rows[0].n === 0 && received - receivedBefore >= 2 * created) break;
        if (performance.now() - drainStart > 180_000) throw new Error('png uploads did not drain in 180 s');
        await new Promise((r) => setTimeout(r, 200));
      }
      rounds.push({ load, cpu: cpuMsPerOp(before, cpuSnapshot(pids), created), drainMs: Math.round(performance.now() - drainStart) });
    }
    const o = pick(rounds.map((r) => r.load));
    return {
      scenario: 'new PNG uploads with one webhook endpoint',
      oncelyRps: o.rps,
      oncelyP50ms: o.p50ms,
      oncelyP99ms: o.p99ms,
      oncelyStatuses: JSON.stringify(o.statuses),
      // Until processed and announced (median per component over the rounds).
      cpuMsPerUpload: JSON.stringify(medianCpu(rounds.map((r) => r.cpu))),
      drainAfterLoadMs: median(rounds.map((r) => r.drainMs)),
    };
  } finally {
    receiver.close();
    await pool.end();
    await Promise.all([api.proc.stop(), worker.proc.stop()]);
  }
}
