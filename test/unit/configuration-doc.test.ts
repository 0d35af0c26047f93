// docs/CONFIGURATION.md is generated from src/config/ (scripts/config-doc.mjs): the page in
// the repository is what the settings say, every setting is on it with its default, and a
// setting without a comment stops the generator.
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { configSchema } from '../../src/config';

const run = promisify(execFile);
const SCRIPT = resolve('scripts/config-doc.mjs');
const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

describe('docs/CONFIGURATION.md', () => {
  it('is what src/config/ says (npm run docs:config writes it)', async () => {
    const { stdout } = await run(process.execPath, [SCRIPT, '--check']);
    expect(stdout).toContain('matches src/config/');
  });

  it('has one row per setting, with the default the schema applies', () => {
    const page = readFileSync('docs/CONFIGURATION.md', 'utf8');
    const rows = new Map([...page.matchAll(/^\| `([A-Z0-9_]+)` \| ([^|]+) \|/gm)].map((m) => [m[1]!, m[2]!.trim()]));
    for (const name of Object.keys(configSchema.shape)) expect(rows.has(name), name).toBe(true);
    expect(rows.get('PORT')).toBe('`3000`');
    expect(rows.get('WORKER_QUEUES')).toBe('`uploads,transcode`');
    expect(rows.get('DATABASE_URL')).toBe('unset: embedded PGlite');
    expect(rows.get('WEBHOOK_TIMEOUT_SECONDS')).toBe('`15`');
  });

  it('refuses a setting whose comment is missing, and a page that differs', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'config-doc-'));
    dirs.push(dir);
    mkdirSync(join(dir, 'src/config'), { recursive: true });
    mkdirSync(join(dir, 'docs'));
    writeFileSync(
      join(dir, 'src/config/index.ts'),
      "import { a } from './a';\nexport const configSchema = z.object({ ...a });\nexport const SECRET_SETTINGS = ['X'] as const;\n",
    );
    writeFileSync(
      join(dir, 'src/config/a.ts'),
      "// Area. Why.\nexport const a = {\n  /** Documented. */\n  ONE: z.string().default('x'),\n  TWO: z.string(),\n};\n",
    );
    const missing = await run(process.execPath, [SCRIPT], { cwd: dir }).catch((err) => err);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('src/config/a.ts: TWO has no comment saying what it does');

    writeFileSync(
      join(dir, 'src/config/a.ts'),
      "// Area. Why.\nexport const a = {\n  /** Documented. */\n  ONE: z.string().default('x'),\n};\n",
    );
    writeFileSync(join(dir, 'docs/CONFIGURATION.md'), 'stale\n');
    const stale = await run(process.execPath, [SCRIPT, '--check'], { cwd: dir }).catch((err) => err);
    expect(stale.code).toBe(1);
    expect(stale.stderr).toContain('run npm run docs:config');
  });
});
