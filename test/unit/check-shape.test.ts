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

  it("refuses SQL outside a query module, and takes it in src/db/ and a wing's queries", async () => {
    const r = await check(
      tree({
        'src/db/queries/a.ts': "export const a = 'SELECT id FROM uploads';\n",
        'src/things/queries.ts': "export const b = 'DELETE FROM things WHERE id = $1';\n",
        'src/things/move-queries.ts': "export const c = 'UPDATE things SET x = 1';\n",
        'src/things/routes.ts': "export const d = 'INSERT INTO things (id) VALUES ($1)';\n",
      }),
    );
    expect(r.code).toBe(1);
    expect(r.out).toContain('src/things/routes.ts: SQL (INSERT INTO');
    expect(r.out).not.toContain('src/things/queries.ts');
    expect(r.out).not.toContain('src/things/move-queries.ts');
    expect(r.out).not.toContain('src/db/queries/a.ts');
  });

  it('counts the files outside a wing that import it or serve it alone, and refuses more than 4', async () => {
    const files: Record<string, string> = {
      'src/api/wings.ts': "import { thingWing } from '../things/wing';\nexport const w = [thingWing];\n",
      'src/things/wing.ts': "import { only } from '../helpers/only-things';\nexport const thingWing = only;\n",
      'src/helpers/only-things.ts': 'export const only = 1;\n',
      'workflows/things/run.ts': 'export const run = 1;\n',
    };
    for (let i = 0; i < 3; i++)
      files[`src/api/user${i}.ts`] = `import { thingWing } from '../things/wing';\nexport const u${i} = thingWing;\n`;
    files['workflows/index.ts'] = "export * from './things/run';\n";
    const r = await check(tree(files));
    expect(r.code).toBe(1);
    expect(r.out).toContain('wing things: 6 files outside it, over 4');
    expect(r.out).toContain('src/helpers/only-things.ts (serves it alone: move it in)');
    expect(r.out).toContain('workflows/index.ts (imports it)');
    delete files['src/api/user2.ts'];
    delete files['src/api/user1.ts'];
    const within = await check(tree(files));
    expect(within.code, within.out).toBe(0);
    expect(within.out).toContain('files outside each wing: things 4');
  });

  it('passes the repository', async () => {
    const r = await check(process.cwd());
    expect(r.code, r.out).toBe(0);
  });
});
