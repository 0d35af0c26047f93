// `oncely` command line: tenants, migrations and the invariant audit, over the configured
// database and object store. With the embedded default, it talks to the running
// server's PGlite (its address is in DATA_DIR/database-url) or opens it directly.
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { Command, Option } from 'commander';
import getPort from 'get-port';
import { audit } from './audit';
import { loadConfig, type Config } from './config';
import { migrate } from './db/migrate';
import { createPool, pingDatabase, usePreparedStatements, type Pool } from './db/pool';
import type { EmbeddedPostgres } from './devstack/pglite-server';
import { createRoutedStore } from './placement/stores';
import { createTenant } from './tenants';
import {
  createTokenCommand,
  eventsCommand,
  getCommand,
  listCommand,
  redeliverCommand,
  removeCommand,
  revokeTokenCommand,
  runLifecycle,
} from './client/cli-lifecycle';
import { setTenantSettings } from './db/queries/tenants';
import { defaultOutboxPath, EXIT, parseDuration, parseSize, runUpload, type UploadCommandOptions } from './client/cli-upload';
import { FileOutbox } from './client/node';
import { runImport, type ImportCommandOptions } from './client/cli-import';
import { commit, version } from './version';
import { fetchTrace, renderTraceTree, spansOf } from './client/trace-tree';
import { spanContextOf } from './telemetry/context';
import { findUploadById } from './db/queries/uploads';
import { Connection } from '@temporalio/client';
import { ensureSearchAttributes } from './temporal/search-attributes';
import { searchAttributes } from './temporal/names';
import { loadSecretBox } from './secret-box';
import { subjectTag } from './tokens/grant';
import { rewrapPayloadKeys } from './codec/payload-codec';

async function openDatabase(config: Config): Promise<{ pool: Pool; close(): Promise<void> }> {
  let url = config.DATABASE_URL ?? (await readFile(path.join(config.DATA_DIR, 'database-url'), 'utf8').catch(() => undefined))?.trim();
  let embedded: EmbeddedPostgres | undefined;
  if (!config.DATABASE_URL) usePreparedStatements(false);
  if (url) {
    const probe = createPool(url, 1);
    const reachable = await pingDatabase(probe).then(
      () => true,
      () => false,
    );
    await probe.end();
    if (!reachable && !config.DATABASE_URL) url = undefined;
  }
  // PGlite is loaded only when it runs: the production image ships without it.
  const pglite = config.DATABASE_URL ? undefined : await import('./devstack/pglite-server');
  if (!url) {
    embedded = await pglite!.startPglite(path.join(config.DATA_DIR, 'pglite'), await getPort({ host: '127.0.0.1' }));
    url = embedded.url;
  }
  const pool = pglite ? pglite.createEmbeddedPool(url) : createPool(url, 2);
  return {
    pool,
    async close() {
      await pool.end();
      await embedded?.stop();
    },
  };
}

const program = new Command('oncely')
  .description('Oncely: exactly-once uploads')
  .version(`${version} (${commit})`, '-V, --version', 'print the version and the commit it was built from')
  .showHelpAfterError();

program
  .command('migrate')
  .description("apply the SQL migrations, and register Oncely's search attributes on TEMPORAL_NAMESPACE when TEMPORAL_ADDRESS is set")
  .action(async () => {
    const config = loadConfig();
    const db = await openDatabase(config);
    try {
      const applied = await migrate(db.pool);
      console.log(applied.length ? `applied: ${applied.join(', ')}` : 'up to date');
    } finally {
      await db.close();
    }
    // The embedded default's dev server is started with them; a cluster gets them here.
    if (config.TEMPORAL_ADDRESS) {
      const connection = await Connection.connect({ address: config.TEMPORAL_ADDRESS, connectTimeout: 10_000 });
      try {
        const added = await ensureSearchAttributes(connection, config.TEMPORAL_NAMESPACE);
        console.log(
          added.length
            ? `search attributes added on ${config.TEMPORAL_NAMESPACE}: ${added.join(', ')}`
            : `search attributes on ${config.TEMPORAL_NAMESPACE}: up to date`,
        );
      } finally {
        await connection.close();
      }
    }
  });

const tenant = program.command('tenant').description('manage tenants');
tenant
  .command('create')
  .argument('<name>', 'tenant name')
  .option('--json', 'print JSON')
  .addOption(
    new Option('--dedupe <mode>', 'identical bytes share one stored object (sha256) or not (off)')
      .choices(['off', 'sha256'])
      .default('off'),
  )
  .description('create a tenant and print its API key (shown once)')
  .action(async (name: string, opts: { json?: boolean; dedupe: 'off' | 'sha256' }) => {
    const db = await openDatabase(loadConfig());
    try {
      await migrate(db.pool);
      const t = await createTenant(db.pool, name, undefined, opts.dedupe);
      console.log(opts.json ? JSON.stringify(t) : `tenant ${t.tenantId}\napi key ${t.apiKey}   (store it now: only its hash is kept)`);
    } finally {
      await db.close();
    }
  });

tenant
  .command('retention')
  .description("keep a tenant's uploads this many days (then the deletion workflow erases them), or 'off' to keep them")
  .argument('<tenantId>', 'tenant id')
  .argument('<days>', "whole days, or 'off'")
  .action(async (tenantId: string, days: string) => {
    const value = days === 'off' ? null : Number(days);
    if (value !== null && (!Number.isInteger(value) || value < 1 || value > 36500)) {
      console.error(`oncely: days must be a whole number from 1 to 36500, or 'off' (got ${days})`);
      process.exit(2);
    }
    const db = await openDatabase(loadConfig());
    try {
      await migrate(db.pool);
      const row = await setTenantSettings(db.pool, tenantId, { retentionDays: value }).catch(() => undefined);
      if (!row) {
        console.error(`oncely: no tenant ${tenantId}`);
        process.exit(1);
      }
      console.log(`tenant ${row.id}: uploads kept ${row.retention_days === null ? 'until deleted' : `${row.retention_days} days`}`);
    } finally {
      await db.close();
    }
  });

program
  .command('secrets-key')
  .description('after SECRETS_KEY changed (the old one in SECRETS_KEY_PREVIOUS): re-wrap the payload data keys under it')
  .argument('<action>', "'rotate'")
  .action(async (action: string) => {
    if (action !== 'rotate') {
      console.error(`oncely: unknown action ${action} (rotate)`);
      process.exit(2);
    }
    const config = loadConfig();
    if (!config.SECRETS_KEY || !config.SECRETS_KEY_PREVIOUS.length) {
      console.error('oncely: set SECRETS_KEY to the new key and SECRETS_KEY_PREVIOUS to the old one(s)');
      process.exit(2);
    }
    const box = await loadSecretBox(config.SECRETS_KEY, config.DATA_DIR, config.SECRETS_KEY_PREVIOUS);
    const db = await openDatabase(config);
    try {
      await migrate(db.pool);
      console.log(`payload data keys re-wrapped under SECRETS_KEY: ${await rewrapPayloadKeys(db.pool, box)}`);
    } finally {
      await db.close();
    }
  });

program
  .command('subject-tag')
  .description("print what OncelySubject holds for an upload token's subject: find its runs in the Temporal UI or CLI")
  .argument('<tenantId>', 'tenant id')
  .argument('<subject>', "the token's subject")
  .action(async (tenantId: string, subject: string) => {
    const config = loadConfig();
    const tag = subjectTag(await loadSecretBox(config.SECRETS_KEY, config.DATA_DIR, config.SECRETS_KEY_PREVIOUS), tenantId, subject);
    console.log(`${searchAttributes.subject.name} = '${tag}'`);
  });

program
  .command('audit')
  .description('check the exactly-once invariants over the database and the object store')
  .option('--json', 'print JSON')
  .action(async (opts: { json?: boolean }) => {
    const config = loadConfig();
    const db = await openDatabase(config);
    try {
      const routed = await createRoutedStore(
        config,
        db.pool,
        await loadSecretBox(config.SECRETS_KEY, config.DATA_DIR, config.SECRETS_KEY_PREVIOUS),
      );
      const report = await audit(db.pool, routed.store, {
        keyRetentionSeconds: (config.IDEMPOTENCY_TTL_HOURS + config.TOMBSTONE_TTL_HOURS) * 3600,
      });
      routed.close();
      if (opts.json) console.log(JSON.stringify(report, null, 2));
      else {
        console.table({
          tenants: report.tenants,
          uploads: report.uploads,
          'key rows': report.keyRows,
          'objects verified': report.objectsVerified,
          'unreferenced objects': report.unreferencedObjects,
          renditions: report.renditions,
          'webhook deliveries': report.deliveries,
          'delivered events': report.deliveredEvents,
          violations: report.violations.length,
        });
        for (const v of report.violations) console.log(`VIOLATION ${v}`);
      }
      process.exitCode = report.violations.length ? 1 : 0;
    } finally {
      await db.close();
    }
  });

program
  .command('upload')
  .description('upload files exactly once each (resumable: run again after an interruption)')
  .argument('[files...]', 'files to upload')
  .option('--resume', 'first send every upload still pending in the outbox (from interrupted runs)', false)
  .addOption(new Option('--server <url>', 'Oncely API URL').env('ONCELY_URL').default('http://127.0.0.1:3000'))
  // Read from the environment by commander, so --help names the variable, never its value.
  .addOption(new Option('--token <key>', 'API key or upload token (oup_…)').env('ONCELY_TOKEN'))
  .option('--wait', 'also wait until renditions and webhooks are done', false)
  .option('--json', 'print results as JSON on stdout', false)
  .option('--content-type <type>', 'override the media type guessed from the file name')
  .option('--outbox <file>', 'where pending uploads are kept', defaultOutboxPath())
  .option('--max-attempts <n>', 'give up after this many attempts per file', (v) => Number(v), 20)
  .option(
    '--resumable-from <size>',
    'send files at least this big resumably (tus): a rerun continues where the last stopped',
    parseSize,
    parseSize('64MiB'),
  )
  .action(async (files: string[], opts: Omit<UploadCommandOptions, 'token'> & { token?: string; resume: boolean }) => {
    if (files.length === 0 && !opts.resume) {
      console.error('oncely upload: name files to upload, or --resume to finish interrupted ones');
      process.exitCode = EXIT.usage;
      return;
    }
    if (!opts.token) {
      console.error('oncely upload: an API key or upload token is needed (--token or ONCELY_TOKEN)');
      process.exitCode = EXIT.usage;
      return;
    }
    const pendingFiles = opts.resume ? (await new FileOutbox(opts.outbox).list()).map((p) => p.source) : [];
    process.exitCode = await runUpload([...new Set([...pendingFiles, ...files])], { ...opts, token: opts.token });
  });

program
  .command('import')
  .description('import files from URLs exactly once each (the key is derived from the URL: run again, get the same uploads)')
  .argument('[urls...]', 'http(s) URLs of the files')
  .option('--from-file <file>', 'also import the URLs in this file (one per line; # comments)')
  .option('--key <key>', 'the Idempotency-Key of a single URL (default: derived from the URL)')
  .option('--concurrency <n>', 'imports followed at once', (v) => Number(v), 4)
  .option('--timeout <seconds>', 'stop following an import after this long (it goes on on the server)', (v) => Number(v), 3600)
  .option('--no-progress', 'no progress bars')
  .option('--json', 'print one JSON line per URL on stdout', false)
  .addOption(new Option('--server <url>', 'Oncely API URL').env('ONCELY_URL').default('http://127.0.0.1:3000'))
  .addOption(new Option('--token <key>', 'API key (imports:create) or upload token with importHosts').env('ONCELY_TOKEN'))
  .action(async (urls: string[], opts: Omit<ImportCommandOptions, 'token'> & { token?: string }) => {
    if (!opts.token) {
      console.error('oncely import: an API key or upload token is needed (--token or ONCELY_TOKEN)');
      process.exitCode = EXIT.usage;
      return;
    }
    process.exitCode = await runImport(urls, { ...opts, token: opts.token });
  });

program
  .command('trace')
  .description("print an upload's trace (tracing on) from the trace backend's query API, as a tree of spans with durations")
  .argument('<upload-id>', 'the upload')
  .addOption(
    new Option('--query-url <url>', "the trace backend's query API (Jaeger v2)")
      .env('ONCELY_TRACE_QUERY_URL')
      .default('http://127.0.0.1:16686'),
  )
  .option('--json', "print the trace's spans as JSON", false)
  .action(async (uploadId: string, opts: { queryUrl: string; json: boolean }) => {
    const config = loadConfig();
    const db = await openDatabase(config);
    let upload;
    try {
      upload = /^[0-9a-f-]{36}$/i.test(uploadId) ? await findUploadById(db.pool, uploadId) : undefined;
    } finally {
      await db.close();
    }
    const committed = spanContextOf(upload?.traceparent);
    const traceId = committed && committed.traceFlags & 1 ? committed.traceId : undefined;
    if (!upload || !traceId) {
      console.error(
        !upload
          ? `oncely trace: no upload ${uploadId}`
          : committed
            ? `oncely trace: upload ${uploadId} was left out by the trace sampler: it has no trace`
            : `oncely trace: upload ${uploadId} was committed with tracing off: it has no trace`,
      );
      process.exitCode = 1;
      return;
    }
    const trace = await fetchTrace(opts.queryUrl, traceId);
    if (!trace) {
      console.error(`oncely trace: the backend at ${opts.queryUrl} has no trace ${traceId} (not sent yet, or past its retention)`);
      process.exitCode = 1;
      return;
    }
    const spans = spansOf(trace);
    if (opts.json) console.log(JSON.stringify({ traceId, spans }, null, 2));
    else console.log(`trace ${traceId} (upload ${uploadId}, ${spans.length} spans)\n${renderTraceTree(spans)}`);
  });

/** The options every command that talks to the API takes. */
function apiCommand(name: string, description: string) {
  return program
    .command(name)
    .description(description)
    .addOption(new Option('--server <url>', 'Oncely API URL').env('ONCELY_URL').default('http://127.0.0.1:3000'))
    .addOption(new Option('--token <key>', 'API key').env('ONCELY_TOKEN').makeOptionMandatory())
    .option('--json', 'print JSON on stdout', false);
}

apiCommand('ls', "list the tenant's uploads, newest first")
  .addOption(new Option('--status <status>', 'only uploads in this state').choices(['committed', 'processed', 'deleted']))
  .option('--type <mediaType>', 'only this media type, or type/* (image/*)')
  .option('--limit <n>', 'at most this many', (v) => Number(v), 50)
  .action(async (opts) => {
    process.exitCode = await runLifecycle(() => listCommand(opts));
  });

apiCommand('get', "download an upload's original (a cut download resumes where it stopped)")
  .argument('<id>', 'upload id')
  .requiredOption('-o, --output <file>', 'where to write it')
  .option('--no-progress', 'no progress bar')
  .action(async (id: string, opts) => {
    process.exitCode = await runLifecycle(() => getCommand(id, opts));
  });

apiCommand('rm', 'delete uploads with erasure (bytes, renditions, personal metadata)')
  .argument('<ids...>', 'upload ids (up to 100)')
  .option('--wait <seconds>', 'wait this long for the erasure to finish (one id)', (v) => Number(v), 30)
  .action(async (ids: string[], opts) => {
    process.exitCode = await runLifecycle(() => removeCommand(ids, opts));
  });

apiCommand('events', "list the tenant's webhook events, newest first")
  .option('--failed', 'only events some endpoint has not taken', false)
  .option('--upload <id>', "only this upload's events")
  .option('--limit <n>', 'at most this many (100 at most)', (v) => Number(v), 50)
  .action(async (opts) => {
    process.exitCode = await runLifecycle(() => eventsCommand(opts));
  });

apiCommand('redeliver', 'send a webhook event again, with its original webhook-id')
  .argument('<event>', 'event id (evt_…)')
  .option('--endpoint <id>', 'only this endpoint (one added after the event must be named)')
  .action(async (eventId: string, opts) => {
    process.exitCode = await runLifecycle(() => redeliverCommand(eventId, opts));
  });

const token = program.command('token').description('upload tokens: credentials a browser may hold');
token
  .command('create')
  .description('mint an upload token (prints it; the API key needs tokens:mint)')
  .addOption(new Option('--server <url>', 'Oncely API URL').env('ONCELY_URL').default('http://127.0.0.1:3000'))
  .addOption(new Option('--token <key>', 'API key').env('ONCELY_TOKEN').makeOptionMandatory())
  .option('--max-bytes <size>', 'largest file (10MB, 500k, …)', parseSize)
  .option('--types <types...>', "allowed media types or families ('image/*' application/pdf)")
  .option('--max-uploads <n>', 'uploads at most', (v) => Number(v))
  .option('--expires <duration>', 'lifetime (15m, 1h, 900)', parseDuration)
  .option('--subject <id>', "whose uploads these are (your app's user id)")
  .option('--json', 'print JSON on stdout', false)
  .action(async (opts) => {
    process.exitCode = await runLifecycle(() => createTokenCommand(opts));
  });
token
  .command('revoke')
  .description('revoke an upload token at once')
  .argument('<id>', 'upload token id')
  .addOption(new Option('--server <url>', 'Oncely API URL').env('ONCELY_URL').default('http://127.0.0.1:3000'))
  .addOption(new Option('--token <key>', 'API key').env('ONCELY_TOKEN').makeOptionMandatory())
  .option('--json', 'print JSON on stdout', false)
  .action(async (id: string, opts) => {
    process.exitCode = await runLifecycle(() => revokeTokenCommand(id, opts));
  });

await program.parseAsync();
