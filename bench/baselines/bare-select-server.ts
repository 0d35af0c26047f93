// Baseline for the replay path: a bare Hono route that does one primary-key SELECT on the
// same idempotency_keys table and returns the stored body. No auth, no fingerprint, no
// headers: the floor Oncely's replay path is compared with.
import { serve } from '@hono/node-server';
import { Hono } from 'hono';
import pg from 'pg';

const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 10 });
const app = new Hono();
app.post('/replay/:tenant/:key', async (c) => {
  const res = await pool.query({
    name: 'bare_select',
    text: 'SELECT response_status, response_body FROM idempotency_keys WHERE tenant_id = $1 AND key = $2',
    values: [c.req.param('tenant'), c.req.param('key')],
  });
  const row = res.rows[0];
  return row ? c.body(row.response_body, row.response_status, { 'content-type': 'application/json' }) : c.notFound();
});
serve({ fetch: app.fetch, hostname: '127.0.0.1', port: Number(process.env.PORT) }, () => console.log('listening'));
