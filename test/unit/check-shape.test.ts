// scripts/check-shape.mjs (run by `npm run lint`) refuses each kind of shape problem, on a
// small tree made for the purpose, and passes the repository as it is.
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';

const run = promisify(execFile);
const SCRIPT = resolve('scripts/check-shape.mjs');
const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

function tree(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), 'shape-'));
  dirs.push(dir);
  const base: Record<string, string> = {
    'tsconfig.json': JSON.stringify({ compilerOptions: { module: 'esnext', moduleResolution: 'bundler' } }),
    'workflows/upload.ts': 'export const a = 1;\n',
    'workflows/upload-offers.ts': 'export const a = 1;\n',
    'workflows/upload-r3.ts': 'export const a = 1;\n',
    'workflows/downstream-v1.ts': 'export const a = 1;\n',
    'workflows/imports/import-run.ts': 'export const a = 1;\n',
    'activities/index.ts': 'export const a = 1;\n',
    'src/config.ts': 'export const a = 1;\n',
  };
  for (const [path, text] of Object.entries({ ...base, ...files })) {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), text);
  }
  return dir;
}

async function check(cwd: string): Promise<{ code: number; out: string }> {
  try {
    const { stdout } = await run(process.execPath, [SCRIPT], { cwd });
    return { code: 0, out: stdout };
  } catch (err: any) {
    return { code: err.code, out: `${err.stdout}${err.stderr}` };
  }
}

describe('check-shape', () => {
  it('passes a small tree within every limit', async () => {
    const r = await check(tree({ 'src/api/app.ts': "import { a } from '../config';\nexport const b = a;\n" }));
    expect(r).toMatchObject({ code: 0 });
    expect(r.out).toContain('0 up-arrows');
  });

  it('refuses a file over 400 lines and src/api over its budget, saying why', async () => {
    const long = 'export const x = 1;\n'.repeat(401);
    const part = 'export const x = 1;\n'.repeat(390);
    const api = Object.fromEntries(Array.from({ length: 8 }, (_, i) => [`src/api/part-${i}.ts`, part]));
    const r = await check(tree({ 'src/db/long.ts': long, ...api }));
    expect(r.code).toBe(1);
    expect(r.out).toContain('src/db/long.ts: 401 lines, over 400');
    expect(r.out).toContain('src/api: 3120 lines, over its 3000');
  });

  it('refuses a new patched() in a frozen file and a literal patch ID anywhere in workflows', async () => {
    const r = await check(
      tree({
        'workflows/upload-r3.ts': "import { patched } from '@temporalio/workflow';\nexport const a = () => patched(patches.newThing);\n",
        'workflows/other.ts': "import { patched } from '@temporalio/workflow';\nexport const b = () => patched('a-literal');\n",
      }),
    );
    expect(r.code).toBe(1);
    expect(r.out).toContain('workflows/upload-r3.ts: patched(patches.newThing) in a frozen file');
    expect(r.out).toContain('workflows/other.ts: patched() with a literal ID');
  });

  it('counts imports that climb floors and refuses more than 5', async () => {
    const files: Record<string, string> = {};
    for (let i = 0; i < 6; i++) files[`src/db/q${i}.ts`] = `import { x } from '../api/app';\nexport const y${i} = x;\n`;
    files['src/api/app.ts'] = 'export const x = 1;\n';
    const r = await check(tree(files));
    expect(r.code).toBe(1);
    expect(r.out).toContain('6 imports climb to a higher floor, over 5');
    expect(r.out).toContain('src/db/q0.ts (database and object stores) -> src/api/app.ts (the API (mounts every door and wing))');
  });

  it('places a new folder under src/ on the floor of doors and wings: it may use the HTTP kit, not the API', async () => {
    const r = await check(
      tree({
        'src/http/kit.ts': 'export const k = 1;\n',
        'src/api/app.ts': 'export const x = 1;\n',
        'src/collections/routes.ts': "import { k } from '../http/kit';\nimport { x } from '../api/app';\nexport const y = k + x;\n",
      }),
    );
    expect(r.out).toContain('1 up-arrows');
    expect(r.out).not.toContain('on no floor');
    const climbs = await check(
      tree(
        Object.fromEntries(
          Array.from({ length: 6 }, (_, i) => [`src/wing${i}/routes.ts`, "import { x } from '../api/app';\nexport const y = x;\n"]).concat([
            ['src/api/app.ts', 'export const x = 1;\n'],
          ]),
        ),
      ),
    );
    expect(climbs.out).toContain('src/wing0/routes.ts (doors and wings) -> src/api/app.ts (the API (mounts every door and wing))');
  });

  it('passes the repository', async () => {
    const r = await check(process.cwd());
    expect(r.code, r.out).toBe(0);
  });
});
