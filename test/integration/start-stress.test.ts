// The short form of the start stress (npm run start-stress runs the full one): cold starts
// of the embedded default and of each production role through bin/oncely-node, fresh data
// directory and (as root) an empty page cache each time; every one must serve, none hang.
// Node's idle-loop deadlock (src/start-watchdog.ts) hung about 1 start in 15 this way.
import { execFile, execFileSync } from 'node:child_process';
import net from 'node:net';
import { promisify } from 'node:util';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createDatabase, dropDatabase } from '../support/postgres';
import { START_TIMEOUT_EXIT_CODE } from '../../src/start-watchdog';
import { stress, type StartRole } from '../stress/cold-starts';
import { uniqueName } from '../helpers/stack';

const root = path.resolve(import.meta.dirname, '../..');
const STARTS: Record<StartRole, number> = { embedded: 3, api: 3, worker: 3 };
const BOUND_MS = 150_000;
const dbName = uniqueName('start_stress');
let env: Record<string, string>;

beforeAll(async () => {
  // The launcher runs the production bundle: build it from this tree.
  execFileSync(process.execPath, [path.join(root, 'scripts/build.mjs')], { cwd: root });
  const shared = inject('stack');
  env = {
    DATABASE_URL: await createDatabase(shared.pgAdminUrl, dbName, shared.templateDb),
    TEMPORAL_ADDRESS: shared.temporalAddress,
    SECRETS_KEY: randomBytes(32).toString('base64'),
    // Each start has a data directory of its own: the local store, asked for by name.
    EMBEDDED: 'store',
    TASK_QUEUE_UPLOADS: `uploads-${dbName}`,
    TASK_QUEUE_TRANSCODE: `transcode-${dbName}`,
    HOUSEKEEPING_SCHEDULES: 'false',
    WORKER_HTTP_PORT: '0',
  };
});
afterAll(async () => {
  await dropDatabase(inject('stack').pgAdminUrl, dbName).catch(() => {});
});

describe('cold starts through bin/oncely-node', () => {
  for (const role of ['embedded', 'api', 'worker'] as const) {
    it(
      `${STARTS[role]} cold starts of the ${role === 'embedded' ? 'embedded default' : `${role} role`} all serve`,
      async () => {
        const summary = await stress(role, STARTS[role], env, BOUND_MS);
        expect(summary.failures.map((f) => `${f.result} after ${f.ms} ms\n${f.evidence}`)).toEqual([]);
        expect(summary.served).toBe(STARTS[role]);
      },
      STARTS[role] * (BOUND_MS + 40_000),
    );
  }
});

describe('the start watchdog', () => {
  it('a worker whose Temporal accepts connections but never answers exits 75 after START_TIMEOUT_SECONDS, naming the step', async () => {
    const silent = net.createServer(() => {});
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
    const address = `127.0.0.1:${(silent.address() as net.AddressInfo).port}`;
    try {
      const result = await promisify(execFile)('sh', [path.join(root, 'bin/oncely-node'), 'worker'], {
        cwd: root,
        timeout: 60_000,
        env: {
          ...process.env,
          ...env,
          TEMPORAL_ADDRESS: address,
          START_TIMEOUT_SECONDS: '3',
          DATA_DIR: path.join(inject('stack').tmpDir, 'watchdog'),
        },
      }).then(
        () => ({ code: 0, stdout: '' }),
        (err: { code: number; stdout: string }) => err,
      );
      expect(result.code).toBe(START_TIMEOUT_EXIT_CODE);
      const last = JSON.parse(result.stdout.trim().split('\n').at(-1)!);
      expect(last).toMatchObject({ level: 60, step: 'the Temporal worker (connection, workflow bundle)', timeoutSeconds: 3 });
    } finally {
      silent.close();
    }
  }, 90_000);
});
