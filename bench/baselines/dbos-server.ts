// Baseline for new uploads and replays: the same endpoint as a Postgres-only durable
// workflow (DBOS Transact), on the same PostgreSQL database and the same S3 server. The
// workflow ID is the idempotency key; the request streams the body to a staged object and
// starts the workflow, whose two steps promote the staged object (verify it, as Oncely's
// commit does) and record the upload row; nothing downstream. A key whose workflow has
// succeeded is answered from DBOS's recorded output without reading the body into S3.
import { randomUUID } from 'node:crypto';
import { serve, type HttpBindings } from '@hono/node-server';
import { HeadObjectCommand } from '@aws-sdk/client-s3';
import { DBOS } from '@dbos-inc/dbos-sdk';
import { Hono } from 'hono';
import pg from 'pg';
import { bucket, s3, stageBody } from './stage-body';

const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 10 });
await pool.query(`CREATE TABLE IF NOT EXISTS dbos_baseline_uploads (
  id uuid PRIMARY KEY, idempotency_key text UNIQUE NOT NULL, storage_key text NOT NULL, bytes bigint NOT NULL,
  sha256 text NOT NULL, created_at timestamptz NOT NULL DEFAULT now())`);

interface Staged {
  key: string;
  storageKey: string;
  bytes: number;
  sha256: string;
}

async function promote(staged: Staged): Promise<void> {
  const head = await s3.send(new HeadObjectCommand({ Bucket: bucket, Key: staged.storageKey }));
  if (head.ContentLength !== staged.bytes) throw new Error('staged copy is not whole');
}

async function record(staged: Staged): Promise<string> {
  const id = randomUUID();
  const row = await pool.query(
    `INSERT INTO dbos_baseline_uploads (id, idempotency_key, storage_key, bytes, sha256) VALUES ($1, $2, $3, $4, $5)
       ON CONFLICT (idempotency_key) DO UPDATE SET idempotency_key = EXCLUDED.idempotency_key
     RETURNING id, storage_key, bytes, sha256, created_at`,
    [id, staged.key, staged.storageKey, staged.bytes, staged.sha256],
  );
  const r = row.rows[0];
  return JSON.stringify({ uploadId: r.id, storageKey: r.storage_key, bytes: Number(r.bytes), sha256: r.sha256, createdAt: r.created_at });
}

async function uploadWorkflow(staged: Staged): Promise<string> {
  await DBOS.runStep(() => promote(staged), { name: 'promote' });
  return DBOS.runStep(() => record(staged), { name: 'record' });
}
const upload = DBOS.registerWorkflow(uploadWorkflow, { name: 'uploadWorkflow' });

DBOS.setConfig({
  name: 'oncely-bench-baseline',
  applicationVersion: '1',
  systemDatabaseUrl: process.env.DATABASE_URL,
  systemDatabaseSchemaName: 'dbos_baseline',
  systemDatabasePoolSize: 10,
  logLevel: 'warn',
});
await DBOS.launch();

const app = new Hono<{ Bindings: HttpBindings }>();
app.post('/uploads', async (c) => {
  const key = c.req.header('idempotency-key')!;
  const status = await DBOS.getWorkflowStatus(key);
  if (status?.status === 'SUCCESS') {
    c.env.incoming.resume();
    return c.body((await DBOS.retrieveWorkflow<string>(key).getResult())!, 201, { 'content-type': 'application/json' });
  }
  const staged = await stageBody(c.env.incoming, 'dbos-baseline');
  const handle = await DBOS.startWorkflow(upload, { workflowID: key })({ key, ...staged });
  return c.body(await handle.getResult(), 201, { 'content-type': 'application/json' });
});
serve({ fetch: app.fetch, hostname: '127.0.0.1', port: Number(process.env.PORT) }, () => console.log('listening'));
