// Workflow determinism: histories of real runs (fresh ones, and ones recorded from earlier
// versions under test/fixtures/histories) replay against the current workflow code.
// Set RECORD_HISTORIES=1 to refresh the recorded fixtures from this run.
import { randomUUID } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { temporal } from '@temporalio/proto';
import { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { uploadWorkflowId } from '../../src/temporal/ids';
import { startTestStack, type TestStack } from '../helpers/stack';
import { postUpload } from '../helpers/http';

const fixtures = path.resolve(import.meta.dirname, '../fixtures/histories');
let stack: TestStack;

beforeAll(async () => {
  stack = await startTestStack('replay');
});
afterAll(() => stack?.stop());

it('replays fresh and recorded histories without nondeterminism', async () => {
  const tenant = await stack.createTenant();
  const scenarios: Record<string, () => Promise<string>> = {
    completed: async () => {
      const key = `replay-${randomUUID()}`;
      expect((await postUpload(stack.url, { apiKey: tenant.apiKey, key, body: Buffer.from('ok') })).status).toBe(201);
      return key;
    },
    rejected: async () => {
      const key = `replay-${randomUUID()}`;
      expect((await postUpload(stack.url, { apiKey: tenant.apiKey, key, body: Buffer.from('not a png'), contentType: 'image/png' })).status).toBe(415);
      return key;
    },
    duplicates: async () => {
      const key = `replay-${randomUUID()}`;
      const results = await Promise.all(Array.from({ length: 5 }, () => postUpload(stack.url, { apiKey: tenant.apiKey, key, body: Buffer.from('dup') })));
      expect(results.some((r) => r.status === 201)).toBe(true);
      return key;
    },
  };
  const histories: { workflowId: string; history: unknown }[] = [];
  for (const [name, run] of Object.entries(scenarios)) {
    const key = await run();
    const workflowId = uploadWorkflowId(tenant.tenantId, key);
    const history = await stack.temporal.workflow.getHandle(workflowId).fetchHistory();
    histories.push({ workflowId, history });
    if (process.env.RECORD_HISTORIES) {
      mkdirSync(fixtures, { recursive: true });
      writeFileSync(path.join(fixtures, `upload-${name}.json`), JSON.stringify(history, null, 1));
    }
  }
  for (const file of readdirSync(fixtures).filter((f) => f.endsWith('.json'))) {
    histories.push({ workflowId: `fixture/${file}`, history: temporal.api.history.v1.History.fromObject(JSON.parse(readFileSync(path.join(fixtures, file), 'utf8'))) });
  }
  expect(histories.length).toBeGreaterThanOrEqual(3);

  let replayed = 0;
  for await (const result of Worker.runReplayHistories({ workflowBundle: { codePath: inject('stack').workflowBundlePath } }, histories as never)) {
    expect(result.error, `${result.workflowId}: ${result.error}`).toBeUndefined();
    replayed++;
  }
  expect(replayed).toBe(histories.length);
});
