// OPS_PORT moves /healthz, /readyz and /metrics off the port clients reach: the API's public
// port answers them 404 and the operator port serves them (readiness with every dependency
// checked, 503 once the process is stopping); without it they stay on the public port.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { serverPort } from '../support/ports';
import { startTestStack, type TestStack } from '../helpers/stack';

let split: TestStack;
let plain: TestStack;

beforeAll(async () => {
  [split, plain] = await Promise.all([
    startTestStack('opsport', { role: 'api', env: { OPS_PORT: String(await serverPort()) } }),
    startTestStack('opsplain', { role: 'api' }),
  ]);
});
afterAll(async () => {
  await Promise.all([split?.stop(), plain?.stop()]);
});

it('serves health and metrics only on the operator port when OPS_PORT is set', async () => {
  const ops = split.runtime.opsUrl!;
  expect(ops).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
  for (const path of ['/healthz', '/readyz', '/metrics']) {
    const publicAnswer = await fetch(`${split.url}${path}`);
    expect(publicAnswer.status, `public ${path}`).toBe(404);
    expect(await publicAnswer.json()).toMatchObject({ error: 'not_found' });
  }
  const ready = await fetch(`${ops}/readyz`);
  expect(ready.status).toBe(200);
  expect(await ready.json()).toMatchObject({ status: 'ready', checks: { postgres: 'ok', temporal: 'ok', objectStore: 'ok' } });
  expect(await (await fetch(`${ops}/healthz`)).json()).toMatchObject({ role: 'api' });
  const metrics = await fetch(`${ops}/metrics`);
  expect(metrics.status).toBe(200);
  expect(await metrics.text()).toMatch(/^# HELP /m);
  // Only those three: the API itself is not on the operator port.
  expect((await fetch(`${ops}/v1/uploads`)).status).toBe(404);
  // The public API still works.
  expect((await fetch(`${split.url}/v1/uploads`)).status).toBe(401);
});

it('keeps them on the public port when OPS_PORT is unset', async () => {
  expect(plain.runtime.opsUrl).toBeUndefined();
  expect((await fetch(`${plain.url}/readyz`)).status).toBe(200);
  expect((await fetch(`${plain.url}/metrics`)).status).toBe(200);
});

it('answers /readyz 503 on the operator port once the process is stopping', async () => {
  const ops = split.runtime.opsUrl!;
  const stopping = split.runtime.shutdown();
  const answer = await fetch(`${ops}/readyz`);
  expect(answer.status).toBe(503);
  expect(await answer.json()).toMatchObject({ status: 'draining' });
  await stopping;
  await expect(fetch(`${ops}/readyz`)).rejects.toThrow();
});
