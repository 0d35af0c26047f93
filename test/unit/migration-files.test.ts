// The migrator's one sequence: the core's files and each wing's, ordered by number across
// folders, and a number used twice refused before anything runs.
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { migrationFiles } from '../../src/db/migrate';

function tree(files: Record<string, string>): string {
  const root = mkdtempSync(path.join(tmpdir(), 'oncely-migrations-'));
  for (const [file, text] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(root, file)), { recursive: true });
    writeFileSync(path.join(root, file), text);
  }
  return root;
}

describe('migrationFiles', () => {
  it('orders the core and the wings by number, and skips what is not a migration', async () => {
    const root = tree({
      'db/migrations/001_init.sql': 'a',
      'db/migrations/003_more.sql': 'c',
      'imports/migrations/002_imports.sql': 'b',
      'imports/migrations/README.md': 'not one',
      'images/migrations/004_images.sql': 'd',
      'images/queries.ts': 'not a folder of migrations',
      'plain.ts': '',
    });
    const files = await migrationFiles(root);
    expect(files.map((f) => f.name)).toEqual(['001_init.sql', '002_imports.sql', '003_more.sql', '004_images.sql']);
    expect(files[1]!.path).toBe(path.join(root, 'imports/migrations/002_imports.sql'));
  });

  it('refuses a number two folders both use', async () => {
    const root = tree({ 'db/migrations/007_a.sql': '', 'targets/migrations/007_b.sql': '' });
    await expect(migrationFiles(root)).rejects.toThrow(/migration number 007 is used twice/);
  });

  it("finds the project's own files: every number once, the wings' among them", async () => {
    const files = await migrationFiles();
    const numbers = files.map((f) => Number(f.name.slice(0, 3)));
    expect(numbers).toEqual(numbers.map((_, i) => i + 1));
    expect(files.find((f) => f.name === '021_imports.sql')?.path).toMatch(/src\/imports\/migrations\/021_imports\.sql$/);
  });
});
