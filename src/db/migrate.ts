// Runs the numbered .sql files in order: the core's (src/db/migrations) and each wing's
// (src/<wing>/migrations), one sequence by number, so a wing keeps its schema beside its
// queries. A file's name is its ID, wherever it lives. Each file runs in its own
// transaction with its migrations row inserted first, so two migrators racing collide on
// that row's key (one waits, then skips) instead of half-applying DDL twice.
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { sourceRoot } from '../paths';
import type { Pool } from './pool';
import { withTransaction } from './pool';

const MIGRATION_FILE = /^(\d+)_.+\.sql$/;

/** Every migration under `src/` (`db/migrations/` and each `<wing>/migrations/`), in number order; a number used twice is refused. */
export async function migrationFiles(root = sourceRoot): Promise<{ name: string; path: string }[]> {
  const folders = await readdir(root, { withFileTypes: true });
  const files: { name: string; path: string }[] = [];
  for (const folder of folders.filter((d) => d.isDirectory())) {
    const dir = path.join(root, folder.name, 'migrations');
    const names = await readdir(dir).catch(() => [] as string[]);
    for (const name of names.filter((n) => MIGRATION_FILE.test(n))) files.push({ name, path: path.join(dir, name) });
  }
  files.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const seen = new Map<string, string>();
  for (const file of files) {
    const number = MIGRATION_FILE.exec(file.name)![1]!;
    const other = seen.get(number);
    if (other) throw new Error(`migration number ${number} is used twice: ${other} and ${file.path}`);
    seen.set(number, file.path);
  }
  return files;
}

export async function migrate(pool: Pool): Promise<string[]> {
  await pool.query(
    `CREATE TABLE IF NOT EXISTS oncely_migrations (
       id text PRIMARY KEY,
       applied_at timestamptz NOT NULL DEFAULT now()
     )`,
  );
  const applied: string[] = [];
  for (const { name: file, path: filePath } of await migrationFiles()) {
    const sql = await readFile(filePath, 'utf8');
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
