// `npm run chaos -- --uploads N --duration S --seed X`: many clients upload through a stack
// that is being broken on purpose, then every invariant is audited. Bounded in count and
// time, loopback only, stops by itself; the same seed gives the same uploads and the same
// fault order. Exits non-zero on any duplicate, loss or other violation.
import { setMaxListeners } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Command, InvalidArgumentError } from 'commander';
import { WebhookReceiver } from '../test/support/webhook-receiver';
import { createTenant } from '../src/tenants';
import { faultsByKind, FAULTS, runFaultSchedule } from './faults';
import { driveUploads, planUploads, startOrigin } from './load';
import { renderTable, type ChaosResult } from './report';
import { Rng } from './rng';
import { startChaosStack } from './stack';
import { settleAndVerify } from './verify';

const int = (name: string, min: number) => (v: string) => {
  const n = Number(v);
  if (!Number.isInteger(n) || n < min) throw new InvalidArgumentError(`${name} must be an integer ≥ ${min}`);
  return n;
};

const program = new Command('chaos')
  .description('Exactly-once under faults: uploads through Toxiproxy while processes are killed, then a full audit')
  .option('--uploads <n>', 'logical uploads (each with its own key)', int('uploads', 1), 200)
  .option('--duration <seconds>', 'how long faults are injected; uploads are spread over it', int('duration', 10), 120)
  .option('--seed <n>', 'seed for uploads and the fault schedule', int('seed', 0), 1)
  .option('--concurrency <n>', 'uploads in flight at once', int('concurrency', 1), 12)
  .option('--faults <kinds>', `comma-separated subset of: ${FAULTS.map((f) => f.kind).join(', ')}`)
  .option('--settle <seconds>', 'after the faults stop: bound on clients finishing and on reaching quiescence', int('settle', 10), 240)
  .option('--json <file>', 'also write the result as JSON')
  .option('--workflow-bundle <file>', 'reuse a prebuilt workflow bundle instead of bundling')
  .option(
    '--temporal <kind>',
    "dev (Oncely's Temporal dev server, tools/temporal-dev) or server (the real server on the run's PostgreSQL, 4 shards)",
    'dev',
  )
  .option(
    '--replicas <n>',
    'API processes and upload workers (above 1, plus a transcode worker); copies of an upload are sprayed across the APIs',
    int('replicas', 1),
    1,
  )
  .option(
    '--migrate',
    'mid-way through the faults, move every upload stored so far to a storage target (another bucket behind the same proxy)',
  )
  .option('--keep', 'keep the run directory (logs, data) instead of deleting it')
  .parse();

const opts = program.opts<{
  uploads: number;
  duration: number;
  seed: number;
  concurrency: number;
  faults?: string;
  settle: number;
  json?: string;
  keep?: boolean;
  migrate?: boolean;
  workflowBundle?: string;
  temporal: string;
  replicas: number;
}>();
if (opts.temporal !== 'dev' && opts.temporal !== 'server') throw new InvalidArgumentError('--temporal is dev or server');
const temporalKind = opts.temporal;
const faults = faultsByKind(
  opts.faults
    ?.split(',')
    .map((s) => s.trim())
    .filter(Boolean),
  { temporalServer: temporalKind === 'server' },
);
const rng = new Rng(opts.seed);
const t0 = Date.now();
const log = (line: string) => process.stderr.write(`[chaos ${((Date.now() - t0) / 1000).toFixed(1).padStart(6)} s] ${line}\n`);

const dir = mkdtempSync(path.join(os.tmpdir(), 'oncely-chaos-'));
const stack = await startChaosStack(dir, log, { workflowBundlePath: opts.workflowBundle, temporal: temporalKind, replicas: opts.replicas });
const receiver = await new WebhookReceiver().start();
let exitCode = 1;
let stopOrigin = async () => {};
try {
  const { tenantId, apiKey } = await createTenant(stack.pool, 'chaos');
  const endpoint = await fetch(`${stack.directApiUrl}/v1/webhook-endpoints`, {
    method: 'POST',
    headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ url: receiver.url, description: 'chaos receiver' }),
  });
  if (endpoint.status !== 201) throw new Error(`webhook endpoint not created: ${endpoint.status} ${await endpoint.text()}`);
  receiver.secret = ((await endpoint.json()) as { secret: string }).secret;

  const plans = planUploads(rng.fork(1), opts.uploads, `seed${opts.seed}`);
  const origin = await startOrigin(plans);
  stopOrigin = () => origin.close();
  const faultWindowMs = opts.duration * 1000;
  const clientsStop = new AbortController();
  setMaxListeners(0, clientsStop.signal); // every in-flight send listens for the deadline
  const clientDeadline = setTimeout(() => clientsStop.abort(new Error('run deadline')), faultWindowMs + opts.settle * 1000);
  const loadStarted = Date.now();
  log(`${plans.filter((p) => p.imported).length} of them imports`);
  log(`${plans.length} uploads over ${opts.duration} s, ${opts.concurrency} at a time; faults: ${faults.map((f) => f.kind).join(', ')}`);
  const load = driveUploads(plans, {
    baseUrls: stack.apiUrls,
    token: apiKey,
    origin: origin.base,
    concurrency: opts.concurrency,
    spacingMs: (faultWindowMs * 0.9) / plans.length,
    signal: clientsStop.signal,
    onProgress: (done) => done % Math.max(1, Math.round(plans.length / 10)) === 0 && log(`${done}/${plans.length} uploads answered`),
  });
  // A storage migration started mid-way, through the faults (its requests retried under their keys).
  const migration = opts.migrate
    ? (async () => {
        await new Promise((r) => setTimeout(r, faultWindowMs * 0.4));
        const send = (route: string, body: unknown, key: string) =>
          retryThroughFaults(`${stack.apiUrl}${route}`, apiKey, body, key, faultWindowMs + opts.settle * 1000);
        await send('/v1/storage-targets', { name: 'chaos-target', ...stack.target }, `chaos-storage-target-seed-${opts.seed}`);
        const m = (await send(
          '/v1/storage-migrations',
          { from: 'default', to: 'chaos-target', concurrency: 4 },
          `chaos-storage-migration-seed-${opts.seed}`,
        )) as {
          id: string;
          total: number;
        };
        log(`storage migration ${m.id} started: ${m.total} uploads to move`);
        return m.id;
      })()
    : undefined;
  const faultLog = await runFaultSchedule(stack, faults, rng.fork(2), {
    until: () => Date.now() - loadStarted >= faultWindowMs,
    log,
    startedAt: loadStarted,
  });
  log('faults over: healing every proxy, waiting for the clients');
  await stack.proxies.api.getToxiproxy().reset();
  // reset() re-enables every proxy and drops every toxic, the Temporal ↔ PostgreSQL one too.
  await stack.waitForApi();
  const records = await load;
  clearTimeout(clientDeadline);
  const loadSeconds = (Date.now() - loadStarted) / 1000;

  const migrationId = await migration;
  const verdict = await settleAndVerify({ stack, tenantId, token: apiKey, records, receiver, quiesceMs: opts.settle * 1000, log });
  let migrated: ChaosResult['migration'];
  if (migrationId) {
    const res = await fetch(`${stack.directApiUrl}/v1/storage-migrations/${migrationId}`, {
      headers: { authorization: `Bearer ${apiKey}` },
    });
    const m = (await res.json()) as { state: string; total: number; moved: number; skipped: number; failed: number };
    migrated = { state: m.state, total: m.total, moved: m.moved, skipped: m.skipped, failed: m.failed };
    // Uploads deleted before it reached them are not taken: moved + skipped may be under the total.
    if (m.state !== 'completed' || m.failed > 0)
      verdict.other.push(
        `storage migration ${migrationId}: ${m.state}, ${m.moved} moved, ${m.skipped} skipped, ${m.failed} failed of ${m.total}`,
      );
  }
  const result: ChaosResult = {
    command: `npm run chaos -- --uploads ${opts.uploads} --duration ${opts.duration} --seed ${opts.seed} --concurrency ${opts.concurrency}${opts.faults ? ` --faults ${opts.faults}` : ''}${temporalKind === 'server' ? ' --temporal server' : ''}${opts.replicas > 1 ? ` --replicas ${opts.replicas}` : ''}${opts.migrate ? ' --migrate' : ''}`,
    seed: opts.seed,
    finishedAt: new Date().toISOString(),
    loadSeconds,
    planned: plans.length,
    imports: plans.filter((p) => p.imported).length,
    attempted: records.length,
    faultRounds: faultLog.rounds,
    faults: faultLog.counts,
    faultErrors: faultLog.events.filter((e) => e.error).length,
    restarts: { api: stack.apis.reduce((n, p) => n + p.restarts, 0), worker: stack.workers.reduce((n, p) => n + p.restarts, 0) },
    ...(migrated ? { migration: migrated } : {}),
    verdict,
  };
  process.stdout.write(`${renderTable(result)}\n`);
  if (opts.json) writeFileSync(opts.json, `${JSON.stringify(result, null, 2)}\n`);
  const violations =
    verdict.duplicates.length + verdict.losses.length + verdict.other.length + verdict.unanswered + (plans.length - records.length);
  for (const line of [...verdict.duplicates, ...verdict.losses, ...verdict.other].slice(0, 50))
    process.stdout.write(`  violation: ${line}\n`);
  exitCode = violations === 0 ? 0 : 1;
} catch (err) {
  log(`run failed: ${err instanceof Error ? err.stack : String(err)}`);
} finally {
  await stopOrigin();
  await receiver.stop();
  await stack.stop();
  if (opts.keep || exitCode !== 0) log(`run directory kept: ${dir}`);
  else rmSync(dir, { recursive: true, force: true });
}
process.exit(exitCode);

/** A JSON POST under an Idempotency-Key, sent again (the same key) until it is answered 201, refused, or the deadline passes. */
async function retryThroughFaults(url: string, token: string, body: unknown, key: string, withinMs: number): Promise<unknown> {
  const deadline = Date.now() + withinMs;
  let last = '';
  while (Date.now() < deadline) {
    try {
      const res = await fetch(url, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'idempotency-key': key },
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(30_000),
      });
      const text = await res.text();
      if (res.status === 201) return JSON.parse(text);
      last = `${res.status} ${text.slice(0, 200)}`;
      // A refusal of the request itself is not a fault to wait out.
      if (res.status >= 400 && res.status < 500 && ![408, 409, 425, 429].includes(res.status)) break;
    } catch (err) {
      last = err instanceof Error ? err.message : String(err);
    }
    await new Promise((r) => setTimeout(r, 1000));
  }
  throw new Error(`POST ${url} was not answered 201: ${last}`);
}
