// Oncely on the real Temporal server (v1.32.2 on the machine's PostgreSQL, 4 history
// shards; test/support/temporal-server.ts) instead of the dev server: an upload commits
// once and replays, and a worker SIGKILLed mid-commit (its database cut between the object
// commit and the records transaction) leaves one upload after a new worker takes over.
import { randomUUID } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { audit } from '../../src/audit';
import { dropDatabase } from '../support/postgres';
import type { ManagedProcess } from '../../src/devstack/process';
import { TcpProxy } from '../support/tcp-proxy';
import { startTemporalServer, type TemporalServer } from '../support/temporal-server';
import { keyStoragePrefix, uploadWorkflowId } from '../../src/temporal/ids';
import { searchAttributes } from '../../src/temporal/names';
import { getJson, postUpload, sha256 } from '../helpers/http';
import { eventually, listKeys, rowsForKey, commitRetrying, openHistory } from '../helpers/inspect';
import { startTestStack, stackEnv, uniqueName, type TestStack } from '../helpers/stack';
import { startWorkerProcess } from '../helpers/worker-process';

let server: TemporalServer;
let stack: TestStack;
let temporal: Client;
let dbProxy: TcpProxy;
let worker: ManagedProcess | undefined;
const database = uniqueName('temporal_it');

beforeAll(async () => {
  const shared = inject('stack');
  const dir = path.join(shared.tmpDir, database);
  mkdirSync(dir, { recursive: true });
  server = await startTemporalServer({ pgAdminUrl: shared.pgAdminUrl, database, dir, dieWithParent: true });
  // Payload encryption off: with it on, a worker cut off from PostgreSQL cannot open the run's
  // input (its data key is there) and never reaches the commit the second test cuts.
  stack = await startTestStack('real_temporal', { role: 'api', env: { TEMPORAL_ADDRESS: server.address, PAYLOAD_ENCRYPTION: 'false' } });
  temporal = new Client({ connection: await Connection.connect({ address: server.address }) });
  dbProxy = await new TcpProxy({ host: '127.0.0.1', port: 5432 }).start();
}, 180_000);

afterAll(async () => {
  await worker?.stop('SIGKILL');
  await stack?.stop();
  await temporal?.connection.close();
  await dbProxy?.stop();
  await server?.stop();
  const shared = inject('stack');
  for (const db of [database, `${database}_visibility`]) await dropDatabase(shared.pgAdminUrl, db).catch(() => {});
});

const workerEnv = () => ({
  ...stackEnv(stack.name, stack.dbUrl.replace(':5432/', `:${dbProxy.port}/`)),
  S3_BUCKET: stack.config.S3_BUCKET,
  TEMPORAL_ADDRESS: server.address,
  PAYLOAD_ENCRYPTION: 'false',
});
const logFile = () => path.join(inject('stack').tmpDir, `${stack.name}-worker.log`);

it('an upload commits once on the real server, replays, and is found by its search attributes', async () => {
  worker ??= await startWorkerProcess(workerEnv(), logFile());
  const tenant = await stack.createTenant();
  const key = `real-${randomUUID()}`;
  const file = Buffer.from('a file on a real Temporal cluster');
  const first = await postUpload(stack.url, { apiKey: tenant.apiKey, key, body: file });
  expect(first.status, first.text).toBe(201);
  const again = await postUpload(stack.url, { apiKey: tenant.apiKey, key, body: file });
  expect(again.text).toBe(first.text);
  expect(again.headers.get('idempotent-replayed')).toBe('true');
  const handle = temporal.workflow.getHandle(uploadWorkflowId(tenant.tenantId, key));
  const described = await handle.describe();
  expect(described.status.name).toBe('COMPLETED');
  // A committed run records no phase: its status says it.
  expect(described.typedSearchAttributes.get(searchAttributes.phase)).toBeUndefined();
  // Visibility on PostgreSQL answers the operator's query by key.
  const found = await eventually(async () => {
    const ids: string[] = [];
    for await (const wf of temporal.workflow.list({ query: `OncelyIdempotencyKey = '${key}' AND ExecutionStatus = 'Completed'` }))
      ids.push(wf.workflowId);
    return ids.length > 0 ? ids : undefined;
  }, 30_000);
  expect(found).toEqual([uploadWorkflowId(tenant.tenantId, key)]);
}, 120_000);

it('a worker SIGKILLed while the commit retries its records transaction: one upload after a new worker takes over', async () => {
  worker ??= await startWorkerProcess(workerEnv(), logFile());
  const tenant = await stack.createTenant();
  dbProxy.setMode('refuse');
  const key = `real-crash-${randomUUID()}`;
  const file = Buffer.from('bytes that survive a worker crash on the real server');
  const accepted = await postUpload(stack.url, { apiKey: tenant.apiKey, key, body: file, prefer: 'respond-async' });
  expect(accepted.status).toBe(202);
  const handle = temporal.workflow.getHandle(uploadWorkflowId(tenant.tenantId, key));
  // The commit retries on a timer, with no commit marker in the history.
  await eventually(async () => {
    return commitRetrying((await openHistory(await handle.fetchHistory(), stack.runtime.payloadCodec)).events ?? []) ? true : undefined;
  }, 60_000);
  expect((await rowsForKey(stack.runtime.pool, tenant.tenantId, key)).uploads).toHaveLength(0);

  await worker!.stop('SIGKILL');
  dbProxy.setMode('forward');
  worker = await startWorkerProcess(workerEnv(), logFile());
  const done = await eventually(async () => {
    const r = await getJson(`${stack.url}/v1/idempotency-keys/${encodeURIComponent(key)}`, tenant.apiKey);
    return r.json?.state === 'completed' ? r.json : undefined;
  }, 90_000);
  expect(done.response.sha256).toBe(sha256(file));
  const replay = await postUpload(stack.url, { apiKey: tenant.apiKey, key, body: file });
  expect(replay.json).toEqual(done.response);
  const rows = await rowsForKey(stack.runtime.pool, tenant.tenantId, key);
  expect(rows.uploads).toHaveLength(1);
  expect(rows.keys).toHaveLength(1);
  expect(await listKeys(stack.s3, keyStoragePrefix(tenant.tenantId, key))).toEqual([done.response.storageKey]);
  expect((await audit(stack.runtime.pool, stack.s3)).violations).toEqual([]);
}, 240_000);
