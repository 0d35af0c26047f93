// Runs the numbered .sql files in src/db/migrations in order. Each file runs in its own
// transaction with its migrations row inserted first, so two migrators racing collide on
// that row's key (one waits, then skips) instead of half-applying DDL twice.
import { readdir, readFile } from 'node:fs/promises';
import { migrationsDir } from '../paths';
import type { Pool } from './pool';
import { withTransaction } from './pool';

const MIGRATIONS_DIR = `${migrationsDir}/`;

export async function migrate(pool: Pool): Promise<string[]> {
  await pool.query(
    `CREATE TABLE IF NOT EXISTS oncely_migrations (
       id text PRIMARY KEY,
       applied_at timestamptz NOT NULL DEFAULT now()
     )`,
  );
  const files = (await readdir(MIGRATIONS_DIR)).filter((f) => /^\d+_.+\.sql$/.test(f)).sort();
  const applied: string[] = [];
  for (const file of files) {
    const sql = await readFile(MIGRATIONS_DIR + file, 'utf8');
    const didApply = await withTransaction(pool, async (client) => {
      const claim = await client.query('INSERT INTO oncely_migrations (id) VALUES ($1) ON CONFLICT (id) DO NOTHING', [file]);
      if (claim.rowCount === 0) return false;
      await client.query(sql);
      return true;
    });
    if (didApply) applied.push(file);
  }
  return applied;
}
