// Tracing at its own level, with spans kept in memory: a request's server span (the route
// template as its name, an incoming traceparent continued, X-Request-Id answered and logged
// with the trace's ids), an outgoing call's span (its query's values redacted) and the
// traceparent it carries, nothing traced under a request the sampler left out or outside any
// operation, a replay's link, and spans counted when the collector refuses them.
import { Writable } from 'node:stream';
import { context, trace } from '@opentelemetry/api';
import { ExportResultCode } from '@opentelemetry/core';
import { InMemorySpanExporter, type ReadableSpan, type SpanExporter } from '@opentelemetry/sdk-trace-base';
import { Hono } from 'hono';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { accessLog } from '../../src/api/middleware/access-log';
import { requestTrace } from '../../src/telemetry/request-trace';
import type { AppEnv } from '../../src/http/env';
import { registry } from '../../src/metrics';
import { activeTraceparent, linkToCommit, traceFields } from '../../src/telemetry/context';
import { redactKeys, startTracing, tracing } from '../../src/telemetry/tracing';
import { serveOnLoopback, type LoopbackServer } from '../support/loopback';

/** Keeps spans, and refuses exports while `failing` (a collector that is down). */
class Collector implements SpanExporter {
  readonly memory = new InMemorySpanExporter();
  failing = false;
  export(spans: ReadableSpan[], done: (r: { code: ExportResultCode }) => void): void {
    if (this.failing) return done({ code: ExportResultCode.FAILED });
    this.memory.export(spans, done);
  }
  shutdown() {
    return this.memory.shutdown();
  }
}

const collector = new Collector();
let target: LoopbackServer;
let seenTraceparent: string | undefined;

const finished = async () => {
  await tracing().processor.forceFlush();
  return collector.memory.getFinishedSpans();
};

beforeAll(async () => {
  await startTracing('test', {}, collector);
  target = await serveOnLoopback((req, res) => {
    seenTraceparent = req.headers.traceparent as string | undefined;
    res.end('ok');
  });
});
afterAll(async () => {
  await target.close();
  await tracing().shutdown();
});

function app(lines: Record<string, unknown>[] = []) {
  const sink = new Writable({
    write(chunk, _enc, done) {
      lines.push(JSON.parse(String(chunk)));
      done();
    },
  });
  const a = new Hono<AppEnv>();
  a.use(requestTrace());
  a.use(accessLog(pino({ mixin: traceFields }, sink)));
  a.get('/v1/things/:id', async (c) => {
    await fetch(`${target.base}/call?X-Amz-Signature=secret`).then((r) => r.text());
    return c.json({ traceparent: activeTraceparent() });
  });
  return a;
}

describe('a traced request', () => {
  it("continues the caller's trace under the route template, calls out with its context, and answers its X-Request-Id", async () => {
    const lines: Record<string, unknown>[] = [];
    const callerTrace = '4bf92f3577b34da6a3ce929d0e0e4736';
    const res = await app(lines).request('/v1/things/123', {
      headers: { traceparent: `00-${callerTrace}-00f067aa0ba902b7-01`, 'x-request-id': 'order-77' },
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('x-request-id')).toBe('order-77');
    const spans = await finished();
    const server = spans.find((s) => s.name === 'GET /v1/things/:id')!;
    expect(server).toBeDefined();
    expect(server.spanContext().traceId).toBe(callerTrace);
    expect(server.parentSpanId).toBe('00f067aa0ba902b7');
    expect(server.attributes).toMatchObject({
      'http.route': '/v1/things/:id',
      'http.response.status_code': 200,
      'oncely.request_id': 'order-77',
    });
    expect(JSON.stringify(server.attributes)).not.toContain('123');

    const client = spans.find((s) => s.parentSpanId === server.spanContext().spanId && s.attributes['url.full'])!;
    expect(client.attributes['url.full']).toBe(`${target.base}/call`);
    expect(client.attributes['url.query']).toBe('?X-Amz-Signature=REDACTED');
    expect(JSON.stringify(spans.map((s) => s.attributes))).not.toContain('secret');
    expect(seenTraceparent).toMatch(new RegExp(`^00-${callerTrace}-${client.spanContext().spanId}-01$`));
    expect(((await res.json()) as { traceparent: string }).traceparent).toContain(callerTrace);
    // The access line names the request and the span it was written in.
    expect(lines).toEqual([
      expect.objectContaining({ msg: 'request', requestId: 'order-77', trace_id: callerTrace, span_id: server.spanContext().spanId }),
    ]);
  });

  it('does no tracing work under a request the sampler left out, and keeps its decision', async () => {
    collector.memory.reset();
    const lines: Record<string, unknown>[] = [];
    const callerTrace = '5bf92f3577b34da6a3ce929d0e0e4737';
    seenTraceparent = 'unset';
    const res = await app(lines).request('/v1/things/9', { headers: { traceparent: `00-${callerTrace}-00f067aa0ba902b8-00` } });
    expect(res.status).toBe(200);
    expect(await finished()).toEqual([]);
    // Its outgoing call made no span and told the target nothing.
    expect(seenTraceparent).toBeUndefined();
    // A session's later requests keep the decision; its log lines still name the caller's trace.
    expect(((await res.json()) as { traceparent: string }).traceparent).toMatch(new RegExp(`^00-${callerTrace}-[0-9a-f]{16}-00$`));
    expect(lines).toEqual([expect.objectContaining({ msg: 'request', trace_id: callerTrace })]);
  });

  it('traces no outgoing call made outside any traced operation', async () => {
    collector.memory.reset();
    seenTraceparent = 'unset';
    await fetch(`${target.base}/housekeeping`).then((r) => r.text());
    expect(seenTraceparent).toBeUndefined();
    expect(await finished()).toEqual([]);
  });

  it('makes a request id when there is none or it is not a sane token', async () => {
    for (const given of [undefined, 'has spaces in it', 'x'.repeat(129)]) {
      const res = await app().request('/v1/things/1', given ? { headers: { 'x-request-id': given } } : {});
      expect(res.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    }
  });

  it("links a replay's span to the step that committed the answer", async () => {
    const committed = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
    const tracer = trace.getTracer('test');
    tracer.startActiveSpan('replay', (span) => {
      linkToCommit(committed, 'replay');
      // A commit the sampler left out was never recorded: nothing to link to.
      linkToCommit('00-1af7651916cd43dd8448eb211c80319c-c7ad6b7169203331-00', 'replay');
      linkToCommit('not a traceparent', 'replay');
      span.end();
    });
    const replay = (await finished()).find((s) => s.name === 'replay')!;
    expect(replay.links).toEqual([
      {
        context: expect.objectContaining({ traceId: '0af7651916cd43dd8448eb211c80319c', spanId: 'b7ad6b7169203331' }),
        attributes: { 'oncely.link': 'replay' },
      },
    ]);
    // Outside any span there is no traceparent to keep.
    expect(context.with(context.active(), () => trace.getActiveSpan())).toBeUndefined();
    expect(activeTraceparent()).toBeNull();
  });

  it('counts the spans a collector refused, and never fails the traced work', async () => {
    const dropped = async () =>
      (await registry.getSingleMetric('oncely_trace_spans_dropped_total')!.get()).values.find((v) => v.labels.reason === 'export_failed')
        ?.value ?? 0;
    const before = await dropped();
    collector.failing = true;
    try {
      const res = await app().request('/v1/things/2');
      expect(res.status).toBe(200);
      await expect(tracing().processor.forceFlush()).rejects.toThrow();
      expect(await dropped()).toBeGreaterThanOrEqual(before + 2);
    } finally {
      collector.failing = false;
    }
  });
});

describe('span attributes never carry an Idempotency-Key', () => {
  const tenant = '1a79f57b-851b-4d35-8346-0e8a3e333f38';
  it('names an upload run by a keyed hash of its key, the same within a process, and drops object values', () => {
    const a = redactKeys({
      temporalWorkflowId: `upload/${tenant}/order-0042-invoice.pdf`,
      workflowType: 'uploadWorkflow',
      attempt: 1,
      ids: [`upload/${tenant}/order-0042-invoice.pdf`, 'other'],
      searchAttributes: { OncelyIdempotencyKey: ['order-0042-invoice.pdf'] } as never,
    });
    expect(JSON.stringify(a)).not.toContain('order-0042');
    expect(a.temporalWorkflowId).toMatch(new RegExp(`^upload/${tenant}/key-hmac:[0-9a-f]{32}$`));
    expect((a.ids as string[])[0]).toBe(a.temporalWorkflowId);
    expect(a).toMatchObject({ workflowType: 'uploadWorkflow', attempt: 1 });
    expect(a).not.toHaveProperty('searchAttributes');
    expect(redactKeys({ workflowId: `upload/${tenant}/order-0043-invoice.pdf` }).workflowId).not.toBe(a.temporalWorkflowId);
    const plain = { workflowId: 'downstream/7d1e3f5a-0b2c-4d6e-8f9a-0b1c2d3e4f5a', n: 2 };
    expect(redactKeys(plain)).toBe(plain);
  });
});
