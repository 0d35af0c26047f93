// An import whose worker is SIGKILLed mid-file: the read resumes on the next worker from its
// last recorded heartbeat (Range with If-Range), and the upload commits once with the right
// bytes, in one object. The bytes read twice are counted.
import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { audit } from '../../src/audit';
import { keyStoragePrefix } from '../../src/temporal/ids';
import { getJson, sha256 } from '../helpers/http';
import { eventually, listKeys, readObject, rowsForKey } from '../helpers/inspect';
import { stackWithWorkerProcess } from '../helpers/worker-process';
import { startFileOrigin, type FileOrigin } from '../support/file-origin';

const MiB = 1024 * 1024;
const file = randomBytes(24 * MiB);
let env: Awaited<ReturnType<typeof stackWithWorkerProcess>>;
let origin: FileOrigin;

beforeAll(async () => {
  env = await stackWithWorkerProcess('import_crash', { RESUMABLE_PART_MIB: '5', IMPORT_HEARTBEAT_SECONDS: '3' });
  origin = await startFileOrigin(file);
});
afterAll(async () => {
  await origin?.close();
  await env?.stop();
});

it('resumes after the worker is SIGKILLed mid-file: one upload, one object, the right bytes', async () => {
  const { stack } = env;
  const tenant = await stack.createTenant();
  const key = `import-crash-${randomUUID()}`;
  origin.throttle(2 * MiB);
  const started = await fetch(`${stack.url}/v1/imports`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${tenant.apiKey}`,
      'content-type': 'application/json',
      'idempotency-key': key,
      prefer: 'respond-async',
    },
    body: JSON.stringify({ url: `${origin.base}/big.bin`, sha256: sha256(file) }),
  });
  expect(started.status).toBe(202);
  const { uploadId } = (await started.json()) as { uploadId: string };
  // Two parts stored (the progress the view shows lags the heartbeat by at most a second).
  await eventually(async () => {
    const r = await getJson(`${stack.url}/v1/uploads/${uploadId}`, tenant.apiKey);
    return r.json.bytesFetched >= 10 * MiB;
  }, 60_000);
  await env.kill();
  await env.start();

  const done = await getJson(`${stack.url}/v1/uploads/${uploadId}?wait=60`, tenant.apiKey);
  expect(done.json).toMatchObject({ uploadId, bytes: file.length, sha256: sha256(file) });
  expect(origin.ranges).toBeGreaterThanOrEqual(1);
  const refetched = origin.served - file.length;
  console.log(`import resumed after SIGKILL: ${(refetched / MiB).toFixed(1)} MiB of ${file.length / MiB} MiB read twice`);
  expect(refetched).toBeLessThan(file.length / 2);

  expect((await rowsForKey(stack.runtime.pool, tenant.tenantId, key)).uploads).toHaveLength(1);
  const objects = await listKeys(stack.runtime.store, keyStoragePrefix(tenant.tenantId, key));
  expect(objects).toHaveLength(1);
  expect(sha256(await readObject(stack.runtime.store, objects[0]!))).toBe(sha256(file));
  expect((await audit(stack.runtime.pool, stack.runtime.store)).violations).toEqual([]);
});
