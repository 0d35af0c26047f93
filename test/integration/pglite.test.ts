// The embedded database under concurrent work, as the embedded default runs it: the pool
// from createEmbeddedPool (one connection) on PGlite's socket server. Transactions mixed
// with single statements all finish, each with its own answer (ten connections stall).
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { serverPort } from '../support/ports';
import { expect, it } from 'vitest';
import { withTransaction } from '../../src/db/pool';
import { createEmbeddedPool, startPglite } from '../../src/devstack/pglite-server';

it('finishes 300 concurrent transactions and statements, each with its own answer', async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'oncely-pglite-test-'));
  const db = await startPglite(dir, await serverPort());
  const pool = createEmbeddedPool(db.url);
  try {
    await pool.query('CREATE TABLE t (id int PRIMARY KEY, v text NOT NULL)');
    const outcomes = await Promise.all(
      Array.from({ length: 300 }, async (_, i) => {
        if (i % 3 === 0) {
          return withTransaction(pool, async (tx) => {
            await tx.query('INSERT INTO t VALUES ($1, $2)', [i, `row ${i}`]);
            const r = await tx.query<{ v: string }>('SELECT v FROM t WHERE id = $1', [i]);
            return r.rows[0]?.v === `row ${i}`;
          });
        }
        const r = await pool.query<{ v: number }>('SELECT $1::int AS v', [i]);
        return r.rows[0]?.v === i;
      }),
    );
    expect(outcomes.filter((ok) => !ok)).toEqual([]);
    expect((await pool.query<{ n: number }>('SELECT count(*)::int AS n FROM t')).rows[0]!.n).toBe(100);
  } finally {
    await pool.end();
    await db.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}, 60_000);
