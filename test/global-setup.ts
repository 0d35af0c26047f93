// Starts the shared real services once per test run: the Temporal dev server (pinned CLI,
// SQLite file), Versity S3 Gateway, a migrated template database on the machine's
// PostgreSQL, and one workflow bundle. Test files clone what they need from these.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { bundleWorkflowCode } from '@temporalio/worker';
import { serverPort } from './support/ports';
import type { TestProject } from 'vitest/node';
import 'vitest';
import { startTemporalDevServer } from '../src/devstack/temporal-dev-server';
import { startVersity } from './support/versitygw';
import { createMigratedDatabase, dropDatabase } from './support/postgres';
import { workflowsPath } from '../src/worker';
import { workflowPreloadModules } from '../src/paths';
import { WORKFLOW_TRACING_MODULES } from '../src/telemetry/temporal';

declare module 'vitest' {
  export interface ProvidedContext {
    stack: SharedStack;
  }
}

export interface SharedStack {
  tmpDir: string;
  temporalAddress: string;
  s3: { endpoint: string; accessKeyId: string; secretAccessKey: string };
  pgAdminUrl: string;
  templateDb: string;
  workflowBundlePath: string;
}

export default async function setup(project: TestProject) {
  const tmpDir = mkdtempSync(path.join(os.tmpdir(), 'oncely-test-'));
  const pgAdminUrl = process.env.TEST_PG_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
  const templateDb = `oncely_template_${process.pid}`;

  const [temporal, s3, , bundle] = await Promise.all([
    startTemporalDevServer({ port: await serverPort(), dbFile: path.join(tmpDir, 'temporal.db') }),
    startVersity({ port: await serverPort(), dir: path.join(tmpDir, 's3') }),
    createMigratedDatabase(pgAdminUrl, templateDb),
    bundleWorkflowCode({
      workflowsPath,
      workflowInterceptorModules: WORKFLOW_TRACING_MODULES,
      preloadModules: workflowPreloadModules,
      logger: { log() {}, info() {}, warn() {}, error: console.error, debug() {}, trace() {} } as never,
    }),
  ]);
  const workflowBundlePath = path.join(tmpDir, 'workflow-bundle.js');
  writeFileSync(workflowBundlePath, bundle.code);

  project.provide('stack', {
    tmpDir,
    temporalAddress: temporal.address,
    s3: { endpoint: s3.endpoint, accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey },
    pgAdminUrl,
    templateDb,
    workflowBundlePath,
  });

  return async () => {
    await Promise.allSettled([temporal.stop(), s3.stop()]);
    await dropDatabase(pgAdminUrl, templateDb).catch(() => {});
    rmSync(tmpDir, { recursive: true, force: true });
  };
}
