// A split role refuses to run half-configured: without its database, store, Temporal or
// SECRETS_KEY (and not asking for the embedded part by name) it exits at once with code 2 and
// one line per missing setting; the embedded default needs none of them.
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { promisify } from 'node:util';
import { expect, it } from 'vitest';
import { loadConfig } from '../../src/config';
import { nodeTs } from '../../src/devstack/process';
import { missingSettings, shippedParts } from '../../src/role-settings';

const root = path.resolve(import.meta.dirname, '../..');
const configured = {
  DATABASE_URL: 'postgres://oncely@db.internal:5432/oncely',
  S3_ENDPOINT: 'https://s3.internal',
  TEMPORAL_ADDRESS: 'temporal.internal:7233',
  SECRETS_KEY: randomBytes(32).toString('base64'),
};
const names = (lines: string[]) => lines.map((l) => l.split(' ')[0]);

it('names each setting a split role lacks, and none for the embedded default', () => {
  expect(missingSettings(loadConfig(configured), 'api')).toEqual([]);
  expect(names(missingSettings(loadConfig({}), 'api'))).toEqual(['DATABASE_URL', 'S3_ENDPOINT', 'TEMPORAL_ADDRESS', 'SECRETS_KEY']);
  expect(names(missingSettings(loadConfig({ ...configured, SECRETS_KEY: '' }), 'worker'))).toEqual(['SECRETS_KEY']);
  expect(missingSettings(loadConfig({}), 'all')).toEqual([]);
  // Asked for by name, an embedded part stands in for its setting.
  expect(names(missingSettings(loadConfig({ ...configured, S3_ENDPOINT: '', EMBEDDED: 'store,secrets' }), 'worker'))).toEqual([]);
  expect(names(missingSettings(loadConfig({ EMBEDDED: 'database, temporal' }), 'api'))).toEqual(['S3_ENDPOINT', 'SECRETS_KEY']);
  expect(() => loadConfig({ EMBEDDED: 'everything' })).toThrow(/EMBEDDED/);
});

it('a checkout ships every embedded part; where PGlite and the dev server are left out, even the embedded default needs their settings', () => {
  expect([...shippedParts()].sort()).toEqual(['database', 'secrets', 'store', 'temporal']);
  const image = new Set(['store', 'secrets'] as const);
  const lines = missingSettings(loadConfig({}), 'all', image);
  expect(names(lines)).toEqual(['DATABASE_URL', 'TEMPORAL_ADDRESS']);
  for (const line of lines) expect(line).toMatch(/does not ship the embedded (database \(PGlite\)|Temporal dev server)/);
  expect(
    missingSettings(loadConfig({ DATABASE_URL: configured.DATABASE_URL, TEMPORAL_ADDRESS: configured.TEMPORAL_ADDRESS }), 'all', image),
  ).toEqual([]);
  // Asked for by name where it is not shipped: refused, not run.
  expect(names(missingSettings(loadConfig({ ...configured, DATABASE_URL: '', EMBEDDED: 'database' }), 'api', image))).toEqual([
    'DATABASE_URL',
  ]);
  expect(missingSettings(loadConfig({ ...configured, DATABASE_URL: '', EMBEDDED: 'database' }), 'api', image)[0]).toMatch(/does not ship/);
});

it.each(['api', 'worker'])(
  '`oncely %s` with nothing configured exits 2 at once, a line per missing setting, starting nothing',
  async (role) => {
    const started = Date.now();
    const result = await promisify(execFile)(...nodeTs(path.join(root, 'src/main.ts'), role), {
      cwd: root,
      timeout: 60_000,
      env: {
        ...process.env,
        DATABASE_URL: '',
        S3_ENDPOINT: '',
        TEMPORAL_ADDRESS: '',
        SECRETS_KEY: '',
        EMBEDDED: '',
        DATA_DIR: '/nonexistent/oncely',
      },
    }).then(
      () => ({ code: 0, stderr: '' }),
      (err: { code: number; stderr: string }) => err,
    );
    expect(result.code).toBe(2);
    const lines = result.stderr.trim().split('\n');
    expect(lines.map((l) => l.split(' ').slice(0, 3).join(' '))).toEqual([
      `oncely ${role}: DATABASE_URL`,
      `oncely ${role}: S3_ENDPOINT`,
      `oncely ${role}: TEMPORAL_ADDRESS`,
      `oncely ${role}: SECRETS_KEY`,
    ]);
    expect(Date.now() - started).toBeLessThan(30_000);
  },
  60_000,
);
