// Baseline for new uploads, in the style of the first reference article: an idempotency
// table in Postgres and no workflow engine. Claim the key row, stream the body to the
// same S3 server, then complete the row with the response, all inside the request.
import { randomUUID } from 'node:crypto';
import { serve, type HttpBindings } from '@hono/node-server';
import { Hono } from 'hono';
import pg from 'pg';
import { stageBody } from './stage-body';

const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 10 });
await pool.query(`CREATE TABLE IF NOT EXISTS baseline_keys (
  key text PRIMARY KEY, state text NOT NULL, response text, created_at timestamptz DEFAULT now())`);

const app = new Hono<{ Bindings: HttpBindings }>();
app.post('/uploads', async (c) => {
  const key = c.req.header('idempotency-key')!;
  const claim = await pool.query("INSERT INTO baseline_keys (key, state) VALUES ($1, 'in_progress') ON CONFLICT (key) DO NOTHING", [key]);
  if (claim.rowCount === 0) {
    const row = (await pool.query('SELECT state, response FROM baseline_keys WHERE key = $1', [key])).rows[0];
    return row.state === 'completed'
      ? c.body(row.response, 201, { 'content-type': 'application/json' })
      : c.json({ error: 'in_progress' }, 409);
  }
  const { storageKey, bytes, sha256 } = await stageBody(c.env.incoming, 'baseline');
  const response = JSON.stringify({
    uploadId: randomUUID(),
    storageKey,
    bytes,
    sha256,
    createdAt: new Date().toISOString(),
  });
  await pool.query("UPDATE baseline_keys SET state = 'completed', response = $2 WHERE key = $1", [key, response]);
  return c.body(response, 201, { 'content-type': 'application/json' });
});
serve({ fetch: app.fetch, hostname: '127.0.0.1', port: Number(process.env.PORT) }, () => console.log('listening'));
