// A workflow task can run the commit (local activities write the records) and then be lost
// (worker killed, task timed out); its re-run from history may accept another copy than
// the lost task committed, and tell the committed copy's request "not_needed". The long
// chaos run caught the API deleting that copy: an upload row with no object. Here the lost
// task's commit is made by hand, before any worker runs, with the real records activity on
// one of two staged copies; then a worker starts. Whichever copy the run accepts, the
// committed one must be the one kept, and every answer must name it.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { inject } from 'vitest';
import { mediaPresets } from '../../src/services';
import { loadConfig } from '../../src/config';
import { createUploadActivities } from '../../activities/upload-activities';
import { startRuntime, type Runtime } from '../../src/runtime';
import { keyStoragePrefix, uploadWorkflowId } from '../../src/temporal/ids';
import type { UploadWorkflowInput } from '../../src/temporal/definitions';
import { startTestStack, type TestStack } from '../helpers/stack';
import { postUpload, sha256 } from '../helpers/http';
import { eventually, listKeys, readObject, rowsForKey } from '../helpers/inspect';

let stack: TestStack;
let worker: Runtime | undefined;
let tenant: { tenantId: string; apiKey: string };

beforeAll(async () => {
  stack = await startTestStack('lost', { role: 'api', env: { DEFAULT_WAIT_SECONDS: '60' } });
  tenant = await stack.createTenant();
});
afterAll(async () => {
  await worker?.shutdown();
  await stack?.stop();
});

async function workflowInput(workflowId: string): Promise<UploadWorkflowInput> {
  const history = await stack.history(workflowId);
  const payload = history.events![0]!.workflowExecutionStartedEventAttributes!.input!.payloads![0]!;
  return JSON.parse(Buffer.from(payload.data!).toString('utf8')) as UploadWorkflowInput;
}

it('keeps the copy the records transaction committed, whichever copy the run accepts', async () => {
  const keys = Array.from({ length: 4 }, (_, i) => `lost-${i}-${randomUUID()}`);
  const files = keys.map((k) => Buffer.from(`file for ${k}\n`.repeat(200)));
  // Two copies per key, offered while no worker runs: both are staged and wait.
  const answers = keys.map((key, i) =>
    Array.from({ length: 2 }, () => postUpload(stack.url, { apiKey: tenant.apiKey, key, body: files[i]! })),
  );
  const staged = await Promise.all(
    keys.map((key) =>
      eventually(async () => {
        const objects = await listKeys(stack.s3, keyStoragePrefix(tenant.tenantId, key));
        return objects.length === 2 ? objects.sort() : undefined;
      }),
    ),
  );

  // The lost task's commit: the real records activity, on the first copy for even keys and
  // the second for odd ones (which copy the run accepts is up to arrival order).
  const records = createUploadActivities({
    pool: stack.runtime.pool,
    store: stack.s3,
    ttlSeconds: 3600,
    presets: mediaPresets(loadConfig({})),
  });
  const committed = await Promise.all(
    keys.map(async (key, i) => {
      const workflowId = uploadWorkflowId(tenant.tenantId, key);
      const request = await eventually(() => workflowInput(workflowId).catch(() => undefined));
      const storageKey = staged[i]![i % 2]!;
      const response = await records.commitRecords({
        request,
        workflowId,
        uploadId: randomUUID(),
        startedAtMs: Date.now(),
        copy: {
          attemptId: storageKey.split('/').at(-1)!,
          fingerprint: request.fingerprint,
          storageKey,
          bytes: files[i]!.length,
          sha256: sha256(files[i]!),
          sniffedType: null,
        },
      });
      expect(JSON.parse(response.body).storageKey).toBe(storageKey);
      return storageKey;
    }),
  );

  worker = await startRuntime(stack.config, 'worker', { workflowBundlePath: inject('stack').workflowBundlePath });

  for (const [i, key] of keys.entries()) {
    // Each copy's request ends in the committed answer (a 503 after a slow offer is
    // retried with the key, as a client would).
    for (const first of await Promise.all(answers[i]!)) {
      const answer =
        first.status === 201
          ? first
          : await eventually(async () => {
              const r = await postUpload(stack.url, { apiKey: tenant.apiKey, key, body: files[i]! });
              return r.status === 201 ? r : undefined;
            }, 60_000);
      expect(answer.json.storageKey).toBe(committed[i]);
    }
    // The committed copy stays, whole; the other is removed.
    const left = await eventually(async () => {
      const objects = await listKeys(stack.s3, keyStoragePrefix(tenant.tenantId, key));
      return objects.length === 1 ? objects : undefined;
    });
    expect(left).toEqual([committed[i]]);
    expect(sha256(await readObject(stack.s3, committed[i]!))).toBe(sha256(files[i]!));
    const rows = await rowsForKey(stack.runtime.pool, tenant.tenantId, key);
    expect(rows.uploads.map((u: { storage_key: string }) => u.storage_key)).toEqual([committed[i]]);
  }
}, 120_000);
