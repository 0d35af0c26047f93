// Process entrypoint. `tsx src/main.ts` runs the embedded default (API + worker in one
// process, Temporal dev server, PGlite, local-directory store unless configured
// otherwise); `api` or `worker` as the first argument runs one role.
import { loadConfig } from './config';
import { createLogger, startRuntime, type Role } from './runtime';
import { StartWatchdog } from './start-watchdog';
import { startTracing } from './telemetry/tracing';
import { missingSettings } from './role-settings';
import { createTenant, tenantForApiKey } from './tenants';
import { readFile, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { prebuiltWorkflowBundle } from './paths';
import { commit, version } from './version';
import { parseArgs } from 'node:util';
import getPort from 'get-port';

/** Jaeger v2 on loopback, its data in memory, stopped with this process (src/devstack/jaeger.ts). */
async function startLocalTraceBackend(dataDir: string) {
  const { startJaeger } = await import('./devstack/jaeger');
  const port = (preferred: number) => getPort({ host: '127.0.0.1', port: preferred });
  return startJaeger({
    dir: path.join(dataDir, 'jaeger'),
    otlpPort: await port(4318),
    queryPort: await port(16686),
    grpcQueryPort: await port(16685),
    healthPort: await port(13133),
    dieWithParent: true,
  });
}

const usage = 'usage: main.ts [all|api|worker] [--traces] | --version';
let args: ReturnType<typeof parseArgs<{ options: { version: { type: 'boolean' }; traces: { type: 'boolean' } }; allowPositionals: true }>>;
try {
  args = parseArgs({ options: { version: { type: 'boolean' }, traces: { type: 'boolean' } }, allowPositionals: true });
} catch {
  console.error(usage);
  process.exit(2);
}
if (args.values.version) {
  console.log(`oncely ${version} (${commit})`);
  process.exit(0);
}
const role = (args.positionals[0] ?? 'all') as Role;
if (!['all', 'api', 'worker'].includes(role) || args.positionals.length > 1) {
  console.error(usage);
  process.exit(2);
}

const config = loadConfig();
// A split role with a part unconfigured would run a private stack of its own, and the
// production image ships no embedded database or dev server: it refuses, saying what to set.
const missing = missingSettings(config, role);
if (missing.length) {
  for (const line of missing) console.error(`oncely ${role}: ${line}`);
  process.exit(2);
}
const log = createLogger(config);
// --traces: a local trace backend beside the dev server, and this process sending to it.
const localTraces = args.values.traces ? await startLocalTraceBackend(config.DATA_DIR) : undefined;
// Before anything it traces is built: the Temporal client and worker read it (src/telemetry/temporal.ts).
const traces = await startTracing(
  role,
  localTraces ? { ...process.env, OTEL_EXPORTER_OTLP_ENDPOINT: localTraces.otlpEndpoint } : process.env,
);
// Before the first await: it keeps the event loop alive through start-up (src/start-watchdog.ts).
const watchdog = new StartWatchdog(config.START_TIMEOUT_SECONDS, log);
const runtime = await startRuntime(config, role, { workflowBundlePath: workflowBundle(), log, progress: watchdog });

/**
 * The built bundle (dist/main.js) runs the workflow bundle built with it; from source
 * (tsx) the worker bundles the workflows at start, so they always match the source.
 */
function workflowBundle(): string | undefined {
  if (process.env.WORKFLOW_BUNDLE_PATH) return process.env.WORKFLOW_BUNDLE_PATH;
  return fileURLToPath(import.meta.url) === path.join(path.dirname(prebuiltWorkflowBundle), 'main.js') && existsSync(prebuiltWorkflowBundle)
    ? prebuiltWorkflowBundle
    : undefined;
}

/** The embedded default keeps one dev tenant whose key survives restarts. */
async function devTenantKey(): Promise<string> {
  const file = path.join(config.DATA_DIR, 'dev-tenant-key');
  const existing = await readFile(file, 'utf8').catch(() => undefined);
  if (existing && (await tenantForApiKey(runtime.pool, existing.trim()))) return existing.trim();
  const { apiKey } = await createTenant(runtime.pool, 'dev');
  // Written whole, then renamed into place: a reader never sees part of a key.
  await writeFile(`${file}.tmp`, apiKey, { mode: 0o600 });
  await rename(`${file}.tmp`, file);
  return apiKey;
}

if (role === 'all' && !config.DATABASE_URL) {
  watchdog.step('the dev tenant');
  const key = await devTenantKey();
  watchdog.serving();
  console.log(`
  Oncely is running.
    API          ${runtime.apiUrl}
    Temporal UI  ${runtime.uiUrl ?? '(external Temporal: ' + runtime.temporalAddress + ')'}
    Dev API key  ${key}

    Upload page  ${runtime.apiUrl}/${
      localTraces
        ? `
    Traces       ${localTraces.queryUrl}/api/v3/services (Jaeger's query API; the UI is not built in)
                 ONCELY_TRACE_QUERY_URL=${localTraces.queryUrl} bin/oncely trace UPLOAD_ID`
        : ''
    }

  Try (run it twice: the second answer is the same, with Idempotent-Replayed: true):
    curl -si -X POST ${runtime.apiUrl}/v1/uploads -H "Authorization: Bearer ${key}" \\
      -H "Idempotency-Key: demo-${randomUUID()}" -H "Content-Type: text/plain" --data-binary @README.md
`);
} else {
  watchdog.serving();
  runtime.log.info(
    { role, api: runtime.apiUrl, ops: runtime.opsUrl, temporal: runtime.temporalAddress, version, commit },
    'oncely started',
  );
}

let stopping = false;
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    if (stopping) return;
    stopping = true;
    runtime.log.info({ signal }, 'shutting down: no new requests; finishing in-flight ones, draining the worker');
    const started = Date.now();
    runtime
      .shutdown()
      .then(() => traces.shutdown())
      .then(() => localTraces?.stop())
      .then(
        () => {
          runtime.log.info({ ms: Date.now() - started }, 'shutdown complete');
          process.exit(0);
        },
        (err) => {
          runtime.log.error({ err }, 'shutdown failed');
          process.exit(1);
        },
      );
  });
}
