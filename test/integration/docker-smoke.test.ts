// The path a team takes to production, through containers: the project's Dockerfile is built
// (on local stand-ins for its base images: test/docker/stand-ins.sh) and Oncely's services
// come up from docker-compose.yml itself, with test/docker/compose.smoke.yml pointing them at
// the suite's loopback PostgreSQL, Temporal and versitygw (this machine has no registry and
// no bridge network). Through the containers: the migration (SQL and search attributes), the
// CLI, a one-request upload and its replay, a tus upload, a PNG through the default pipeline
// with its webhooks delivered once, a deletion with erasure, an infected upload rejected by
// the compose clamd, a worker crashing mid-upload
// (brought back by its restart policy; the upload commits once), and `down -v` leaving nothing.
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdirSync, writeFileSync, copyFileSync, createWriteStream } from 'node:fs';
import path from 'node:path';
import { createHash } from 'node:crypto';
import { Connection } from '@temporalio/client';
import { serverPort } from '../support/ports';
import Long from 'long';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { createPool, type Pool } from '../../src/db/pool';
import { searchAttributes } from '../../src/temporal/names';
import { getJson, postUpload, sha256 } from '../helpers/http';
import { eventually, rowsForKey } from '../helpers/inspect';
import { png } from '../helpers/media';
import { uniqueName } from '../helpers/stack';
import { EICAR, EICAR_SIGNATURE } from '../support/clamd';
import { composeBinary, ensureEngine, sh, type Engine } from '../support/docker';
import { createDatabase, dropDatabase } from '../support/postgres';
import { WebhookReceiver } from '../support/webhook-receiver';

const root = path.resolve(import.meta.dirname, '../..');
const name = uniqueName('smoke');
const project = name.replaceAll('_', '-');
let engine: Engine | undefined;
let env: NodeJS.ProcessEnv;
let api = '';
let ports: { api: number; ops: number; worker: number; transcode: number; clamd: number };
let pool: Pool | undefined;
let receiver: WebhookReceiver | undefined;
let tenant: { tenantId: string; apiKey: string };
let composeUp = false;
const timings: Record<string, number> = {};
const imageSizes: Record<string, number> = {};

const compose = (args: string[], timeoutMs = 300_000) =>
  sh(composeBinary, ['-p', project, '-f', 'docker-compose.yml', '-f', 'test/docker/compose.smoke.yml', ...args], {
    cwd: root,
    env,
    timeoutMs,
  });
const timed = async <T>(what: string, fn: () => Promise<T>): Promise<T> => {
  const started = Date.now();
  try {
    return await fn();
  } finally {
    timings[what] = Date.now() - started;
  }
};

beforeAll(async () => {
  const shared = inject('stack');
  const dir = path.join(shared.tmpDir, name);
  mkdirSync(dir, { recursive: true });
  engine = await ensureEngine(path.join(dir, 'dockerd.log'));
  await timed('stand-ins', () => sh('sh', ['test/docker/stand-ins.sh'], { cwd: root, timeoutMs: 900_000 }));
  const commit = (await sh('git', ['rev-parse', '--short=12', 'HEAD'], { cwd: root }).catch(() => 'unknown')).trim();
  // The app with no --target: it is the Dockerfile's default.
  for (const [target, tag] of [
    [undefined, 'oncely:smoke'],
    ['transcode', 'oncely-transcode:smoke'],
  ] as const)
    await timed(`build ${target ?? 'default (app)'}`, () =>
      sh(
        'docker',
        [
          'build',
          '--quiet',
          '--network',
          'host',
          ...(target ? ['--target', target] : []),
          '--build-arg',
          `ONCELY_COMMIT=${commit}`,
          '-t',
          tag,
          '.',
        ],
        {
          cwd: root,
          timeoutMs: 1_200_000,
        },
      ),
    );
  for (const tag of ['oncely:smoke', 'oncely-transcode:smoke'])
    imageSizes[tag] = Math.round(Number((await sh('docker', ['image', 'inspect', '-f', '{{.Size}}', tag])).trim()) / 1e6);

  ports = {
    api: await serverPort(),
    ops: await serverPort(),
    worker: await serverPort(),
    transcode: await serverPort(),
    clamd: await serverPort(),
  };
  // clamd's image: Debian's daemon with the tests' signature, listening on loopback.
  const clamdContext = path.join(dir, 'clamd');
  mkdirSync(clamdContext, { recursive: true });
  copyFileSync(path.join(root, 'test/docker/clamd.Dockerfile'), path.join(clamdContext, 'Dockerfile'));
  writeFileSync(
    path.join(clamdContext, 'oncely-test.hdb'),
    `${createHash('md5').update(EICAR).digest('hex')}:${EICAR.length}:${EICAR_SIGNATURE}\n`,
  );
  writeFileSync(
    path.join(clamdContext, 'clamd.conf'),
    ['Foreground yes', 'DatabaseDirectory /var/lib/clamav', `TCPSocket ${ports.clamd}`, 'TCPAddr 127.0.0.1', 'SelfCheck 0'].join('\n') +
      '\n',
  );
  await timed('build clamd', () =>
    sh('docker', ['build', '--quiet', '--network', 'host', '-t', 'oncely-clamd:smoke', clamdContext], { timeoutMs: 900_000 }),
  );

  // An empty database (the migration makes it) and a namespace without Oncely's search
  // attributes (as temporal-setup leaves it: the migration registers them).
  const dbUrl = await createDatabase(shared.pgAdminUrl, name);
  pool = createPool(dbUrl, 2);
  const connection = await Connection.connect({ address: shared.temporalAddress });
  try {
    await connection.workflowService.registerNamespace({
      namespace: project,
      workflowExecutionRetentionPeriod: { seconds: Long.fromNumber(86_400) },
    });
  } finally {
    await connection.close();
  }
  env = {
    ...process.env,
    POSTGRES_PASSWORD: 'unused-by-the-smoke',
    ONCELY_DB_PASSWORD: 'unused-by-the-smoke',
    TEMPORAL_DB_PASSWORD: 'unused-by-the-smoke',
    S3_SECRET_ACCESS_KEY: shared.s3.secretAccessKey,
    SECRETS_KEY: randomBytes(32).toString('base64'),
    ADMIN_TOKEN: randomBytes(24).toString('hex'),
    SMOKE_DATABASE_URL: dbUrl,
    SMOKE_S3_ENDPOINT: shared.s3.endpoint,
    SMOKE_S3_BUCKET: project,
    SMOKE_S3_ACCESS_KEY_ID: shared.s3.accessKeyId,
    SMOKE_S3_SECRET_ACCESS_KEY: shared.s3.secretAccessKey,
    SMOKE_TEMPORAL_ADDRESS: shared.temporalAddress,
    SMOKE_NAMESPACE: project,
    SMOKE_API_PORT: String(ports.api),
    SMOKE_OPS_PORT: String(ports.ops),
    SMOKE_WORKER_PORT: String(ports.worker),
    SMOKE_TRANSCODE_PORT: String(ports.transcode),
    SMOKE_CLAMD_PORT: String(ports.clamd),
  };
  api = `http://127.0.0.1:${ports.api}`;
  composeUp = true;
  await timed('compose up (healthy)', () =>
    compose(['up', '-d', '--no-build', '--wait', '--wait-timeout', '300', 'api', 'worker', 'transcode-worker'], 400_000),
  );
  receiver = await new WebhookReceiver().start();
}, 2_400_000);

afterAll(async () => {
  const shared = inject('stack');
  if (composeUp) {
    // Kept for a failed run: every container's log.
    const logs = await compose(['logs', '--no-color', '--timestamps']).catch((err: Error) => err.message);
    const out = createWriteStream(path.join(shared.tmpDir, `${name}-compose.log`));
    out.end(logs);
    await compose(['down', '-v', '--remove-orphans', '--timeout', '30']).catch(() => {});
  }
  await receiver?.stop();
  await pool?.end();
  await dropDatabase(shared.pgAdminUrl, name).catch(() => {});
  await engine?.stop();
  console.log(`compose smoke timings (ms): ${JSON.stringify(timings)}; image sizes (MB): ${JSON.stringify(imageSizes)}`);
}, 180_000);

const auth = () => ({ authorization: `Bearer ${tenant.apiKey}` });

it('runs every role from the image: the migration (SQL and search attributes), the CLI, the API and both workers, healthy', async () => {
  const migrateLog = await compose(['logs', '--no-color', 'migrate']);
  expect(migrateLog).toContain('applied:');
  expect(migrateLog).toContain(`search attributes added on ${project}:`);
  for (const key of Object.values(searchAttributes)) expect(migrateLog).toContain(key.name);

  const version = await compose(['exec', '-T', 'api', 'oncely', '--version']);
  // The API's health and metrics are on its operator port only, not on the port clients reach.
  const health = await getJson(`http://127.0.0.1:${ports.ops}/healthz`);
  expect(health.json).toMatchObject({ status: 'ok', role: 'api' });
  expect((await getJson(`http://127.0.0.1:${ports.ops}/readyz`)).status).toBe(200);
  for (const route of ['/healthz', '/readyz', '/metrics']) expect((await fetch(`${api}${route}`)).status, route).toBe(404);
  expect(version.trim()).toBe(`${health.json.version} (${health.json.commit})`);
  expect(health.json.commit).toBe((await sh('git', ['rev-parse', '--short=12', 'HEAD'], { cwd: root }).catch(() => 'unknown')).trim());
  for (const port of [ports.worker, ports.transcode]) {
    const ready = await getJson(`http://127.0.0.1:${port}/readyz`);
    expect(ready.status, `worker on ${port}`).toBe(200);
    expect(ready.json.checks.worker).toBe('ok');
    expect((await getJson(`http://127.0.0.1:${port}/healthz`)).json).toMatchObject({ role: 'worker', commit: health.json.commit });
  }
  // The image carries no development stack: even the embedded default's role refuses to run
  // without a database and Temporal, and the packages and tools for them are not there.
  const refused = await sh('docker', ['run', '--rm', '--network', 'none', 'oncely:smoke', 'all']).then(
    () => ({ code: 0, stderr: '' }),
    (err: { code?: number; message: string }) => ({ code: err.code, stderr: err.message }),
  );
  expect(refused.code).toBe(2);
  expect(refused.stderr).toMatch(/oncely all: DATABASE_URL is not set: this installation does not ship the embedded database/);
  expect(refused.stderr).toMatch(
    /oncely all: TEMPORAL_ADDRESS is not set: this installation does not ship the embedded Temporal dev server/,
  );
  const contents = await sh('docker', [
    'run',
    '--rm',
    '--network',
    'none',
    '--entrypoint',
    'sh',
    'oncely:smoke',
    '-c',
    'ls node_modules/@temporalio/core-bridge/releases; ls node_modules/@electric-sql node_modules/@swc scripts workflows 2>&1 | grep -c "No such file"',
  ]);
  expect(contents.trim().split('\n')).toEqual(['x86_64-unknown-linux-gnu', '4']);
  // tini is PID 1 in every role's container (signals forwarded, children reaped); each has
  // its memory limit and rotated logs from the compose file.
  for (const service of ['api', 'worker', 'transcode-worker']) {
    expect((await compose(['exec', '-T', service, 'cat', '/proc/1/comm'])).trim(), service).toBe('tini');
    const container = (await compose(['ps', '-q', service])).trim();
    const [memory, logType, maxSize] = (
      await sh('docker', [
        'inspect',
        '-f',
        '{{.HostConfig.Memory}} {{.HostConfig.LogConfig.Type}} {{index .HostConfig.LogConfig.Config "max-size"}}',
        container,
      ])
    )
      .trim()
      .split(' ');
    expect(Number(memory), service).toBeGreaterThan(0);
    expect([logType, maxSize], service).toEqual(['json-file', '10m']);
  }
  // The workers run as the unprivileged user, ffmpeg and poppler only where transcoding runs.
  expect((await compose(['exec', '-T', 'worker', 'id', '-u'])).trim()).toBe('1000');
  await compose(['exec', '-T', 'transcode-worker', 'sh', '-c', 'command -v ffmpeg && command -v pdftoppm']);
  await expect(compose(['exec', '-T', 'worker', 'sh', '-c', 'command -v ffmpeg'])).rejects.toThrow();

  const created = JSON.parse(await compose(['exec', '-T', 'api', 'oncely', 'tenant', 'create', 'smoke', '--json'])) as {
    tenantId: string;
    apiKey: string;
  };
  tenant = created;
  expect(tenant.apiKey).toBeTruthy();
});

it('stores a one-request upload once and replays its answer byte for byte', async () => {
  const key = `smoke-one-${randomUUID()}`;
  const body = randomBytes(256 * 1024);
  const first = await postUpload(api, { apiKey: tenant.apiKey, key, body });
  expect(first.status, first.text).toBe(201);
  expect(first.json.sha256).toBe(sha256(body));
  const again = await postUpload(api, { apiKey: tenant.apiKey, key, body });
  expect(again.status).toBe(201);
  expect(again.text).toBe(first.text);
  expect(again.headers.get('idempotent-replayed')).toBe('true');
  const content = await fetch(`${api}/v1/uploads/${first.json.uploadId}/content`, { headers: auth() });
  expect(sha256(Buffer.from(await content.arrayBuffer()))).toBe(sha256(body));
});

it('takes a tus upload in two PATCHes', async () => {
  const key = `smoke-tus-${randomUUID()}`;
  const file = randomBytes(3 * 1024 * 1024 + 17);
  const created = await fetch(`${api}/v1/tus`, {
    method: 'POST',
    headers: { ...auth(), 'idempotency-key': key, 'tus-resumable': '1.0.0', 'upload-length': String(file.length) },
  });
  expect(created.status).toBe(201);
  const location = new URL(created.headers.get('location')!, api).toString();
  let offset = 0;
  for (const part of [file.subarray(0, 1024 * 1024), file.subarray(1024 * 1024)]) {
    const res = await fetch(location, {
      method: 'PATCH',
      headers: { ...auth(), 'tus-resumable': '1.0.0', 'upload-offset': String(offset), 'content-type': 'application/offset+octet-stream' },
      body: part,
    });
    expect(res.status).toBe(204);
    offset += part.length;
    expect(res.headers.get('upload-offset')).toBe(String(offset));
  }
  const answer = await eventually(async () => {
    const r = await getJson(`${api}/v1/idempotency-keys/${key}`, tenant.apiKey);
    return r.json?.state === 'completed' ? r.json : undefined;
  }, 60_000);
  expect(answer.response.sha256).toBe(sha256(file));
});

it('processes a PNG through the default pipeline on the transcode worker, renders a variant there, and delivers each webhook once; erases it on delete', async () => {
  const endpoint = await postJson('/v1/webhook-endpoints', { url: receiver!.url });
  expect(endpoint.status).toBe(201);
  receiver!.secret = endpoint.json.secret;
  const key = `smoke-png-${randomUUID()}`;
  const picture = await png(320, 200);
  const up = await postUpload(api, { apiKey: tenant.apiKey, key, body: picture, contentType: 'image/png' });
  expect(up.status, up.text).toBe(201);
  const uploadId = up.json.uploadId as string;
  const processed = await eventually(async () => {
    const r = await getJson(`${api}/v1/uploads/${uploadId}?wait=20`, tenant.apiKey);
    return r.json?.status === 'processed' ? r.json : undefined;
  }, 120_000);
  expect(processed.renditions.map((r: { name: string }) => r.name)).toEqual(expect.arrayContaining(['thumbnail', 'display']));
  const thumbnail = await fetch(`${api}/v1/uploads/${uploadId}/renditions/thumbnail`, { headers: auth() });
  expect(thumbnail.status).toBe(200);
  expect((await thumbnail.arrayBuffer()).byteLength).toBeGreaterThan(0);
  // A variant on request: its render run on the uploads worker, its render an activity on the transcode worker.
  expect((await postJson('/v1/image-presets', { name: 'smoke', spec: 'w_80,f_webp' })).status).toBe(201);
  const variant = await fetch(`${api}/v1/uploads/${uploadId}/images/smoke`, { headers: auth() });
  expect(variant.status, await variant.clone().text()).toBe(200);
  expect(variant.headers.get('content-type')).toBe('image/webp');
  const webp = Buffer.from(await variant.arrayBuffer());
  expect([webp.subarray(0, 4).toString(), webp.subarray(8, 12).toString()]).toEqual(['RIFF', 'WEBP']);
  const forUpload = () => receiver!.received.filter((r) => r.json.data?.uploadId === uploadId);
  await eventually(async () => forUpload().some((r) => r.json.type === 'upload.processed') || undefined, 60_000);
  // Nothing is delivered twice: each event once, under one webhook-id.
  const byType = (type: string) => forUpload().filter((r) => r.json.type === type);
  expect(byType('upload.completed')).toHaveLength(1);
  expect(byType('upload.processed')).toHaveLength(1);

  const deleted = await fetch(`${api}/v1/uploads/${uploadId}`, { method: 'DELETE', headers: { ...auth(), prefer: 'wait=60' } });
  expect(deleted.status, await deleted.clone().text()).toBe(200);
  const gone = await fetch(`${api}/v1/uploads/${uploadId}/content`, { headers: auth() });
  expect([404, 410]).toContain(gone.status);
  await eventually(async () => byType('upload.deleted').length === 1 || undefined, 60_000);
  expect(byType('upload.deleted')).toHaveLength(1);
  const detail = await getJson(`${api}/v1/uploads/${uploadId}`, tenant.apiKey);
  expect(detail.json).toMatchObject({ status: 'deleted', renditions: [], fileName: null, erasedAt: expect.any(String) });
}, 240_000);

it('scans through the compose clamd: an infected upload is rejected, a clean one stays available', async () => {
  const pipeline = await fetch(`${api}/v1/pipelines`, {
    method: 'POST',
    headers: { ...auth(), 'content-type': 'application/json', 'idempotency-key': `smoke-${randomUUID()}` },
    body: JSON.stringify({ name: 'scanned', steps: [{ type: 'scan.clamav', unscanned: 'reject' }] }),
  });
  expect(pipeline.status, await pipeline.clone().text()).toBe(201);
  const settle = async (body: Buffer) => {
    const up = await postUpload(api, {
      apiKey: tenant.apiKey,
      key: `smoke-scan-${randomUUID()}`,
      body,
      contentType: 'text/plain',
      pipeline: 'scanned',
    });
    expect(up.status, up.text).toBe(201);
    return eventually(async () => {
      const r = await getJson(`${api}/v1/uploads/${up.json.uploadId}?wait=20`, tenant.apiKey);
      return r.json?.status === 'processed' ? r.json : undefined;
    }, 120_000);
  };
  const infected = await settle(EICAR);
  expect(infected).toMatchObject({ availability: 'rejected', rejectionReason: `infected: ${EICAR_SIGNATURE}.UNOFFICIAL` });
  const clean = await settle(Buffer.from('nothing to see here'));
  expect(clean.availability).toBe('available');
  expect(clean.pipeline.steps).toMatchObject([{ type: 'scan.clamav', status: 'succeeded', scan: { verdict: 'clean' } }]);
}, 240_000);

it('a worker crashing mid-upload is brought back by its restart policy, and the upload commits once', async () => {
  const container = (await compose(['ps', '-q', 'worker'])).trim();
  const inspect = async (format: string) => (await sh('docker', ['inspect', '-f', format, container])).trim();
  const restartsBefore = Number(await inspect('{{.RestartCount}}'));
  const key = `smoke-crash-${randomUUID()}`;
  const file = randomBytes(4 * 1024 * 1024);
  // The body arrives in two halves; the worker dies between them.
  let sendRest!: () => void;
  const rest = new Promise<void>((r) => (sendRest = r));
  const body = new ReadableStream<Uint8Array>({
    async start(controller) {
      controller.enqueue(file.subarray(0, file.length / 2));
      await rest;
      controller.enqueue(file.subarray(file.length / 2));
      controller.close();
    },
  });
  const answer = fetch(`${api}/v1/uploads`, {
    method: 'POST',
    headers: {
      ...auth(),
      'idempotency-key': key,
      'content-length': String(file.length),
      'content-type': 'application/octet-stream',
      prefer: 'wait=60',
    },
    body,
    duplex: 'half',
  } as RequestInit);
  // A crash, as the OOM killer makes one: the process dies, nobody stopped the container.
  // (`docker kill` counts as stopping it by hand, and no restart policy applies to that.)
  const pid = await inspect('{{.State.Pid}}');
  await sh('kill', ['-9', pid]);
  sendRest();
  const first = await answer;
  const text = await first.text();
  // 201/202, or — no worker took the upload in time — 409 (the key's run is open) or 503
  // with Retry-After; a client then sends the same request again under its key, as this one does.
  const retryLater = (status: number) => status === 409 || status === 503;
  expect([201, 202, 409, 503], text).toContain(first.status);
  if (retryLater(first.status)) {
    expect(Number(first.headers.get('retry-after')), text).toBeGreaterThan(0);
    await eventually(async () => {
      const again = await postUpload(api, { apiKey: tenant.apiKey, key, body: file, sha: null, prefer: 'wait=30' });
      expect([201, 202, 409, 503], again.text).toContain(again.status);
      return !retryLater(again.status) || undefined;
    }, 180_000);
  }
  const committed = await eventually(async () => {
    const r = await getJson(`${api}/v1/idempotency-keys/${key}`, tenant.apiKey);
    return r.json?.state === 'completed' ? r.json : undefined;
  }, 120_000);
  expect(committed.response.sha256).toBe(sha256(file));
  expect(Number(await inspect('{{.RestartCount}}'))).toBeGreaterThan(restartsBefore);
  await eventually(
    async () =>
      (await fetch(`http://127.0.0.1:${ports.worker}/readyz`).then(
        (r) => r.ok,
        () => false,
      )) || undefined,
    120_000,
  );
  const replay = await postUpload(api, { apiKey: tenant.apiKey, key, body: file, sha: null });
  expect(replay.status).toBe(201);
  expect(replay.headers.get('idempotent-replayed')).toBe('true');
  const rows = await rowsForKey(pool!, tenant.tenantId, key);
  expect(rows.uploads).toHaveLength(1);
  expect(rows.keys).toHaveLength(1);
  // The invariants over everything the smoke stored, checked by the image's own CLI.
  await compose(['exec', '-T', 'api', 'oncely', 'audit', '--json']);
}, 300_000);

it('compose down -v leaves no container, volume or listener behind', async () => {
  await compose(['down', '-v', '--remove-orphans', '--timeout', '30']);
  composeUp = false;
  const label = `label=com.docker.compose.project=${project}`;
  expect((await sh('docker', ['ps', '-aq', '--filter', label])).trim()).toBe('');
  expect((await sh('docker', ['volume', 'ls', '-q', '--filter', label])).trim()).toBe('');
  for (const port of Object.values(ports)) {
    const answered = await fetch(`http://127.0.0.1:${port}/healthz`, { signal: AbortSignal.timeout(2000) }).then(
      () => true,
      () => false,
    );
    expect(answered, `port ${port}`).toBe(false);
  }
});

async function postJson(pathname: string, json: unknown) {
  const res = await fetch(`${api}${pathname}`, {
    method: 'POST',
    headers: { ...auth(), 'content-type': 'application/json', 'idempotency-key': `smoke-${randomUUID()}` },
    body: JSON.stringify(json),
  });
  return { status: res.status, json: (await res.json()) as any };
}
