// npm run start-stress -- [--embedded 50] [--roles 20] [--bound-seconds 150] [--tree DIR]
// Cold starts of the embedded default and of each production role (API, worker) through
// bin/oncely-node (test/stress/cold-starts.ts); prints one line per start and a summary,
// and exits 1 if any start hung or exited instead of serving.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Command } from 'commander';
import { serverPort } from '../support/ports';
import { createMigratedDatabase, dropDatabase } from '../support/postgres';
import { startTemporalDevServer } from '../../src/devstack/temporal-dev-server';
import { dropPageCache, stress, type StressSummary } from './cold-starts';

const opts = new Command()
  .option('--embedded <n>', 'cold starts of the embedded default', (v) => Number(v), 50)
  .option('--roles <n>', 'cold starts of each production role (api, worker)', (v) => Number(v), 20)
  .option('--bound-seconds <s>', 'a start not serving by then is a hang', (v) => Number(v), 150)
  .option('--tree <dir>', "another checkout's built bin/oncely-node to start (to compare builds)")
  .parse()
  .opts<{ embedded: number; roles: number; boundSeconds: number; tree?: string }>();

const pgAdminUrl = process.env.TEST_PG_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const dbName = `oncely_start_stress_${process.pid}`;
const tmp = mkdtempSync(path.join(os.tmpdir(), 'oncely-start-stress-'));
const temporal = await startTemporalDevServer({ port: await serverPort(), dbFile: path.join(tmp, 'temporal.db') });
const databaseUrl = await createMigratedDatabase(pgAdminUrl, dbName);
const env = {
  DATABASE_URL: databaseUrl,
  TEMPORAL_ADDRESS: temporal.address,
  SECRETS_KEY: randomBytes(32).toString('base64'),
  EMBEDDED: 'store',
  TASK_QUEUE_UPLOADS: `uploads-stress-${process.pid}`,
  TASK_QUEUE_TRANSCODE: `transcode-stress-${process.pid}`,
};
console.log(
  `page cache dropped before each start: ${(await dropPageCache()) ? 'yes' : 'no (not root)'}; node flags: those of bin/oncely-node${process.env.ONCELY_NODE_FLAGS ? ` + ${process.env.ONCELY_NODE_FLAGS}` : ''}`,
);
const summaries: StressSummary[] = [];
try {
  for (const [role, n] of [
    ['embedded', opts.embedded],
    ['api', opts.roles],
    ['worker', opts.roles],
  ] as const) {
    summaries.push(
      await stress(
        role,
        n,
        env,
        opts.boundSeconds * 1000,
        (o, i) => {
          console.log(`${role} #${i + 1}: ${o.result} in ${(o.ms / 1000).toFixed(1)} s`);
          if (o.evidence) console.log(o.evidence);
        },
        opts.tree && path.resolve(opts.tree),
      ),
    );
  }
} finally {
  await temporal.stop();
  await dropDatabase(pgAdminUrl, dbName).catch(() => {});
  rmSync(tmp, { recursive: true, force: true });
}
console.log('\nrole      starts  served  hung  exited  median s  max s');
for (const s of summaries) {
  console.log(
    `${s.role.padEnd(9)} ${String(s.starts).padStart(6)}  ${String(s.served).padStart(6)}  ${String(s.hung).padStart(4)}  ${String(s.exited).padStart(6)}  ${(s.medianMs / 1000).toFixed(1).padStart(8)}  ${(s.maxMs / 1000).toFixed(1).padStart(5)}`,
  );
}
process.exit(summaries.every((s) => s.served === s.starts) ? 0 : 1);
