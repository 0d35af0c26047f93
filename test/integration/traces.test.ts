// One upload, one trace, read back from a real trace backend (Jaeger v2, through its query
// API): the API (this process, traced) and its worker (a process of its own, SIGKILLed once)
// send OTLP to it. The trace holds the request, the Update-with-Start, the workflow, the
// commit with its S3 and Postgres spans, the downstream run, the image step and the webhook
// POST, whose receiver sees the same trace; a replay is a short trace linked to the commit; a
// transcode retried after its worker died stays in the upload's trace; with the backend gone,
// uploads still succeed and the dropped spans are counted.
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes, randomUUID } from 'node:crypto';
import { serverPort } from '../support/ports';
import { context, trace } from '@opentelemetry/api';
import { suppressTracing } from '@opentelemetry/core';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import type { ManagedProcess } from '../../src/devstack/process';
import { startJaeger, type Jaeger } from '../../src/devstack/jaeger';
import { fetchTrace, spansOf, type OtlpTrace, type TraceSpan } from '../../src/client/trace-tree';
import { registry } from '../../src/metrics';
import { spanContextOf } from '../../src/telemetry/context';
import { startTracing, tracing } from '../../src/telemetry/tracing';
import { getJson, postUpload, sha256 } from '../helpers/http';
import { eventually } from '../helpers/inspect';
import { audio, png } from '../helpers/media';
import { startTestStack, stackEnv, type TestStack } from '../helpers/stack';
import { startWorkerProcess } from '../helpers/worker-process';
import { WebhookReceiver } from '../support/webhook-receiver';

let dir: string;
let jaeger: Jaeger;
let stack: TestStack;
let worker: ManagedProcess | undefined;
let workerEnv: Record<string, string>;
let logFile: string;
let receiver: WebhookReceiver;
let tenant: { tenantId: string; apiKey: string };

beforeAll(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'oncely-traces-'));
  const [otlpPort, queryPort, grpcQueryPort, healthPort] = await Promise.all([1, 2, 3, 4].map(() => serverPort()));
  jaeger = await startJaeger({ dir, otlpPort: otlpPort!, queryPort: queryPort!, grpcQueryPort: grpcQueryPort!, healthPort: healthPort! });
  const otel = { OTEL_EXPORTER_OTLP_ENDPOINT: jaeger.otlpEndpoint, OTEL_BSP_SCHEDULE_DELAY: '200' };
  await startTracing('api', otel);
  stack = await startTestStack('traces', { role: 'api' });
  workerEnv = { ...stackEnv(stack.name, stack.dbUrl), S3_BUCKET: stack.config.S3_BUCKET, ...otel };
  logFile = path.join(inject('stack').tmpDir, `${stack.name}-worker.log`);
  worker = await startWorkerProcess(workerEnv, logFile);
  receiver = await new WebhookReceiver().start();
  tenant = await stack.createTenant();
  const endpoint = await fetch(`${stack.url}/v1/webhook-endpoints`, {
    method: 'POST',
    headers: { authorization: `Bearer ${tenant.apiKey}`, 'content-type': 'application/json', 'idempotency-key': `ep-${randomUUID()}` },
    body: JSON.stringify({ url: receiver.url }),
  });
  receiver.secret = ((await endpoint.json()) as { secret: string }).secret;
}, 120_000);

afterAll(async () => {
  await worker?.stop('SIGKILL');
  await stack?.stop();
  await tracing().shutdown();
  await receiver?.stop();
  await jaeger?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const traceIdOf = async (uploadId: string) => {
  const row = await stack.runtime.pool.query('SELECT traceparent FROM uploads WHERE id = $1', [uploadId]);
  return spanContextOf(row.rows[0]?.traceparent)!.traceId;
};

/**
 * The trace once it holds every named span (spans arrive in batches, from two processes) and,
 * when `whole`, once every span but its root has arrived with its parent.
 */
async function traceWith(traceId: string, names: string[], o: { whole?: boolean } = {}): Promise<{ spans: TraceSpan[]; raw: OtlpTrace }> {
  return eventually(async () => {
    const raw = await fetchTrace(jaeger.queryUrl, traceId);
    if (!raw) return undefined;
    const spans = spansOf(raw);
    if (!names.every((n) => spans.some((s) => s.name === n))) return undefined;
    if (o.whole && spans.filter((s) => !s.parentId || !spans.some((p) => p.id === s.parentId)).length !== 1) return undefined;
    return { spans, raw };
  }, 60_000);
}

const named = (spans: TraceSpan[], name: string) => spans.filter((s) => s.name === name);
const parentOf = (spans: TraceSpan[], s: TraceSpan) => spans.find((p) => p.id === s.parentId);

/** `fn` within a root span of this process (a client that traces): its requests carry the span's context. */
const withinTestSpan = <T>(name: string, fn: () => Promise<T>) =>
  trace.getTracer('test').startActiveSpan(name, async (span) => {
    try {
      return await fn();
    } finally {
      span.end();
    }
  });

it('follows one PNG upload with a webhook endpoint end to end in one trace', async () => {
  const body = await png(32, 24);
  const key = `trace-${randomUUID()}`;
  const created = await withinTestSpan('client upload', () =>
    postUpload(stack.url, { apiKey: tenant.apiKey, key, body, contentType: 'image/png' }),
  );
  expect(created.status).toBe(201);
  expect(created.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
  const uploadId = created.json.uploadId as string;
  await eventually(
    async () => receiver.received.some((r) => r.json.type === 'upload.processed' && r.json.data.uploadId === uploadId),
    60_000,
  );
  const traceId = await traceIdOf(uploadId);

  const { spans, raw } = await traceWith(
    traceId,
    [
      'POST /v1/uploads',
      'UpdateWithStartWorkflow:offerCopyForAnswer',
      'RunWorkflow:uploadWorkflow',
      'RunActivity:commitUpload',
      'RunWorkflow:downstreamWorkflow',
      'RunActivity:runStep',
      'RunActivity:deliverWebhook',
    ],
    { whole: true },
  );
  // No attribute of any span (the API's, the worker's, the workflow's) names the Idempotency-Key:
  // the run's workflow ID is there with a keyed hash in its place.
  expect(JSON.stringify(raw)).not.toContain(key);
  expect(JSON.stringify(raw)).toMatch(new RegExp(`upload/${tenant.tenantId}/key-hmac:[0-9a-f]{32}`));
  // This process is traced too: its fetch is the client span the server's span continues.
  const post = named(spans, 'POST /v1/uploads')[0]!;
  expect(post.where).toBe('api');
  const client = parentOf(spans, post)!;
  expect(client.name).toBe('POST');
  const root = parentOf(spans, client)!;
  expect(root).toMatchObject({ name: 'client upload', parentId: null });
  // The body went to the store within the request; the commit checked it there and wrote the records.
  expect(spans.some((s) => s.name.startsWith('S3.') && s.where === 'api')).toBe(true);
  const commit = named(spans, 'RunActivity:commitUpload')[0]!;
  expect(commit.where).toBe('worker');
  const underCommit = spans.filter((s) => s.parentId === commit.id).map((s) => s.name);
  expect(underCommit).toContain('S3.HeadObject');
  expect(underCommit.filter((n) => n.startsWith('pg.query:INSERT')).length).toBeGreaterThanOrEqual(2);
  expect(underCommit).toContain('StartWorkflow:downstreamWorkflow');
  // Every span hangs from the request: nothing in the trace is orphaned.
  for (const s of spans) if (s !== root) expect(parentOf(spans, s), s.name).toBeDefined();

  // Each webhook POST is a client span under its delivery, and its receiver saw that span's context.
  const deliveries = named(spans, 'RunActivity:deliverWebhook');
  const posts = spans.filter((s) => s.name === 'POST' && deliveries.some((d) => d.id === s.parentId));
  expect(posts.length).toBe(deliveries.length);
  const sent = receiver.received.filter((r) => r.json.data.uploadId === uploadId);
  expect(sent.length).toBeGreaterThanOrEqual(2);
  for (const r of sent) {
    const ctx = spanContextOf(r.traceparent);
    expect(ctx?.traceId).toBe(traceId);
    expect(posts.map((p) => p.id)).toContain(ctx?.spanId);
  }
});

it('answers a replay in a short trace of its own, linked to the commit', async () => {
  const key = `trace-replay-${randomUUID()}`;
  const body = randomBytes(2048);
  const first = await postUpload(stack.url, { apiKey: tenant.apiKey, key, body });
  expect(first.status).toBe(201);
  const uploadId = first.json.uploadId as string;
  const committed = (await stack.runtime.pool.query('SELECT traceparent FROM idempotency_keys WHERE upload_id = $1', [uploadId])).rows[0]
    .traceparent as string;
  const commit = spanContextOf(committed)!;
  expect(commit.traceId).toBe(await traceIdOf(uploadId));

  // The retry is sent within a span of this process: its trace is the replay's.
  const { replayTrace, again } = await withinTestSpan('client retry', async () => ({
    replayTrace: trace.getActiveSpan()!.spanContext().traceId,
    again: await postUpload(stack.url, { apiKey: tenant.apiKey, key, body }),
  }));
  expect(again.headers.get('idempotent-replayed')).toBe('true');
  const { spans, raw } = await traceWith(replayTrace, ['POST /v1/uploads']);
  expect(spans.every((s) => !s.name.startsWith('RunWorkflow') && !s.name.startsWith('UpdateWithStart'))).toBe(true);
  const links = raw
    .resourceSpans!.flatMap((rs) => rs.scopeSpans!.flatMap((ss) => ss.spans!))
    .find((s) => s.name === 'POST /v1/uploads') as unknown as {
    links?: { traceId: string; spanId: string }[];
  };
  expect(links.links?.map((l) => [l.traceId, l.spanId])).toEqual([[commit.traceId, commit.spanId]]);
});

it("keeps a transcode retried after its worker was SIGKILLed in the upload's trace", async () => {
  const created = await postUpload(stack.url, {
    apiKey: tenant.apiKey,
    key: `trace-crash-${randomUUID()}`,
    body: await audio(300),
    contentType: 'audio/wav',
  });
  expect(created.status).toBe(201);
  const uploadId = created.json.uploadId as string;
  const downstream = stack.temporal.workflow.getHandle(`downstream/${uploadId}`);
  await eventually(async () => {
    const desc = await downstream.describe();
    return desc.raw.pendingActivities?.find((a) => a.activityType?.name === 'runStep')?.lastHeartbeatTime ? true : undefined;
  }, 60_000);
  await worker!.stop('SIGKILL');
  const killedAt = Date.now();
  worker = await startWorkerProcess(workerEnv, logFile);
  const done = await getJson(`${stack.url}/v1/uploads/${uploadId}?wait=120`, tenant.apiKey);
  expect(done.json.status).toBe('processed');

  const { spans } = await traceWith(await traceIdOf(uploadId), [
    'RunWorkflow:downstreamWorkflow',
    'RunActivity:runStep',
    'RunActivity:markUploadProcessed',
  ]);
  // The killed attempt's span never ended; the retry's is in the same trace, under the same scheduling.
  const retried = named(spans, 'RunActivity:runStep').filter((s) => s.startMs >= killedAt - 1000);
  expect(retried.length).toBeGreaterThanOrEqual(1);
  expect(parentOf(spans, retried[0]!)?.name).toBe('StartActivity:runStep');
}, 240_000);

/** A request sent without a trace of its own (as a client that does not trace sends it). */
function untraced(url: string, init: RequestInit & { body?: Buffer | string }) {
  return context.with(suppressTracing(context.active()), () => fetch(url, init));
}

it("keeps a tus upload's requests and its commit in one trace, and a direct upload's", async () => {
  const auth = { authorization: `Bearer ${tenant.apiKey}` };
  const file = randomBytes(300_000);
  const tusKey = `trace-tus-${randomUUID()}`;
  const created = await untraced(`${stack.url}/v1/tus`, {
    method: 'POST',
    headers: { ...auth, 'tus-resumable': '1.0.0', 'upload-length': String(file.length), 'idempotency-key': tusKey },
  });
  expect(created.status).toBe(201);
  const location = new URL(created.headers.get('location')!, stack.url).toString();
  for (const [from, to] of [
    [0, 100_000],
    [100_000, file.length],
  ]) {
    const patched = await untraced(location, {
      method: 'PATCH',
      headers: { ...auth, 'tus-resumable': '1.0.0', 'upload-offset': String(from), 'content-type': 'application/offset+octet-stream' },
      body: file.subarray(from, to),
    });
    expect(patched.status).toBe(204);
  }

  const directKey = `trace-direct-${randomUUID()}`;
  const planned = await untraced(`${stack.url}/v1/direct-uploads`, {
    method: 'POST',
    headers: { ...auth, 'content-type': 'application/json', 'idempotency-key': directKey },
    body: JSON.stringify({ bytes: file.length, sha256: sha256(file), contentType: 'application/octet-stream' }),
  });
  expect(planned.status).toBe(201);
  const plan = (await planned.json()) as { id: string; upload: { method: string; url: string; headers: Record<string, string> } };
  const put = await untraced(new URL(plan.upload.url, stack.url).toString(), {
    method: plan.upload.method,
    headers: plan.upload.headers,
    body: file,
  });
  expect(put.status).toBe(200);
  const completed = await untraced(`${stack.url}/v1/direct-uploads/${plan.id}/complete`, { method: 'POST', headers: auth });
  expect(completed.status).toBe(201);

  for (const [key, requests] of [
    [tusKey, ['POST /v1/tus', 'PATCH /v1/tus/:id']],
    [directKey, ['POST /v1/direct-uploads', 'POST /v1/direct-uploads/:id/complete']],
  ] as const) {
    const row = await stack.runtime.pool.query('SELECT id FROM uploads WHERE tenant_id = $1 AND idempotency_key = $2', [
      tenant.tenantId,
      key,
    ]);
    const { spans } = await traceWith(await traceIdOf(row.rows[0].id), [...requests, 'RunActivity:commitUpload'], { whole: true });
    const roots = spans.filter((s) => !parentOf(spans, s));
    // The session's creation is the root; every later request of the session hangs from it.
    expect(roots.map((r) => r.name)).toEqual([requests[0]]);
    for (const later of named(spans, requests[1])) expect(later.parentId).toBe(roots[0]!.id);
    if (key === tusKey) expect(named(spans, 'PATCH /v1/tus/:id')).toHaveLength(2);
  }
});

/** The spans of `raw` named `name`, with their links. */
function rawSpans(raw: OtlpTrace, name: string) {
  return raw.resourceSpans!.flatMap((rs) => rs.scopeSpans!.flatMap((ss) => ss.spans!)).filter((s) => s.name === name) as unknown as {
    links?: { traceId: string; spanId: string; attributes?: { key: string; value: { stringValue?: string } }[] }[];
  }[];
}

it("links a redelivery's and a deletion's own traces to the upload's commit", async () => {
  const created = await postUpload(stack.url, { apiKey: tenant.apiKey, key: `trace-later-${randomUUID()}`, body: randomBytes(256) });
  expect(created.status).toBe(201);
  const uploadId = created.json.uploadId as string;
  const commit = spanContextOf(
    (await stack.runtime.pool.query('SELECT traceparent FROM uploads WHERE id = $1', [uploadId])).rows[0].traceparent as string,
  )!;
  const event = await eventually(async () => {
    const page = await getJson(`${stack.url}/v1/events?uploadId=${uploadId}`, tenant.apiKey);
    return page.json.items?.find((e: { type: string }) => e.type === 'upload.completed');
  }, 60_000);
  const within = (name: string, fn: () => Promise<Response>) =>
    withinTestSpan(name, async () => ({ traceId: trace.getActiveSpan()!.spanContext().traceId, status: (await fn()).status }));
  const auth = { authorization: `Bearer ${tenant.apiKey}` };
  const redelivery = await within('redeliver', () =>
    fetch(`${stack.url}/v1/events/${event.id}/redeliver`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json', prefer: 'wait=30' },
      body: '{}',
    }),
  );
  expect(redelivery.status).toBe(200);
  const deletion = await within('delete', () => fetch(`${stack.url}/v1/uploads/${uploadId}`, { method: 'DELETE', headers: auth }));
  expect(deletion.status).toBeLessThan(300);

  for (const [traceId, activity, why] of [
    [redelivery.traceId, 'RunActivity:redeliverEvent', 'redelivery'],
    [deletion.traceId, 'RunActivity:tombstoneUpload', 'deletion'],
  ] as const) {
    const { raw } = await traceWith(traceId, [activity]);
    const links = rawSpans(raw, activity).flatMap((s) => s.links ?? []);
    expect(links.map((l) => [l.traceId, l.spanId, l.attributes?.find((a) => a.key === 'oncely.link')?.value.stringValue])).toEqual([
      [commit.traceId, commit.spanId, why],
    ]);
  }
}, 240_000);

it('traces nothing anywhere for a request the sampler left out: no span, no orphan trace, no traceparent sent on', async () => {
  const since = Date.now() * 1000;
  const callerTrace = randomBytes(16).toString('hex');
  const notSampled = `00-${callerTrace}-${randomBytes(8).toString('hex')}-00`;
  const created = await postUpload(stack.url, {
    apiKey: tenant.apiKey,
    key: `trace-left-out-${randomUUID()}`,
    body: await png(16, 16),
    contentType: 'image/png',
    headers: { traceparent: notSampled },
  });
  expect(created.status).toBe(201);
  const uploadId = created.json.uploadId as string;
  const sent = await eventually(async () => {
    const mine = receiver.received.filter((r) => r.json.data?.uploadId === uploadId);
    return mine.some((r) => r.json.type === 'upload.processed') ? mine : undefined;
  }, 60_000);
  // Nothing downstream was told to trace: the commit recorded no trace to link to, no webhook carried one.
  expect((await stack.runtime.pool.query('SELECT traceparent FROM uploads WHERE id = $1', [uploadId])).rows[0].traceparent).toBeNull();
  for (const r of sent) expect(r.traceparent).toBeUndefined();

  // A traced upload after it: once its spans are in, anything the left-out one made would be too.
  const later = await withinTestSpan('client upload after', () =>
    postUpload(stack.url, { apiKey: tenant.apiKey, key: `trace-after-${randomUUID()}`, body: randomBytes(64) }),
  );
  await traceWith(await traceIdOf(later.json.uploadId), ['POST /v1/uploads', 'RunActivity:commitUpload']);
  const until = Date.now() * 1000;
  expect(await fetchTrace(jaeger.queryUrl, callerTrace)).toBeUndefined();
  // Every trace in the window starts at a request or at this process's own spans: none at an
  // S3 call, a query or a webhook POST that had no traced operation around it.
  const roots = await rootsBetween(since, until);
  expect(roots).toContain('client upload after');
  for (const name of roots) expect(name).toMatch(/^(client .*|redeliver|delete|[A-Z]+ \/v1\/\S+)$/);
});

/** The names of the root spans of the traces with spans between `sinceUs` and `untilUs` (microseconds). */
async function rootsBetween(sinceUs: number, untilUs: number): Promise<string[]> {
  const q = new URLSearchParams({
    'query.service_name': 'oncely',
    'query.start_time_min': new Date(sinceUs / 1000).toISOString(),
    'query.start_time_max': new Date(untilUs / 1000).toISOString(),
    'query.num_traces': '1000',
  });
  const res = await fetch(`${jaeger.queryUrl}/api/v3/traces?${q}`);
  expect(res.status).toBe(200);
  const body = (await res.json()) as { result?: OtlpTrace };
  return spansOf(body.result ?? {})
    .filter((s) => !s.parentId)
    .map((s) => s.name);
}

it('uploads while the trace backend is down, and counts the spans it could not send', async () => {
  const dropped = async () =>
    (await registry.getSingleMetric('oncely_trace_spans_dropped_total')!.get()).values
      .filter((v) => v.labels.reason === 'export_failed')
      .reduce((n, v) => n + v.value, 0);
  await jaeger.stop();
  const before = await dropped();
  for (let i = 0; i < 3; i++) {
    const res = await postUpload(stack.url, { apiKey: tenant.apiKey, key: `trace-down-${randomUUID()}`, body: randomBytes(512) });
    expect(res.status).toBe(201);
  }
  await eventually(async () => (await dropped()) > before, 60_000);
});
