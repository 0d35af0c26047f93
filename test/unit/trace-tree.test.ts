// `oncely trace`'s reading of a backend's OTLP JSON and its tree, and which exporter the
// standard variables choose: all without a backend.
import { describe, expect, it } from 'vitest';
import { OTLPTraceExporter as JsonExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as ProtoExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { renderTraceTree, spansOf, type OtlpTrace } from '../../src/client/trace-tree';
import { otlpExporter, tracesWanted } from '../../src/telemetry/tracing';
import { defaultPayloadConverter } from '@temporalio/common';
import { carriesSampledTrace } from '../../src/temporal/trace-header';

const ns = (ms: number) => String(BigInt(1_800_000_000_000 + ms) * 1_000_000n);
const span = (spanId: string, name: string, from: number, to: number, parentSpanId?: string, error = false) => ({
  spanId,
  ...(parentSpanId ? { parentSpanId } : {}),
  name,
  startTimeUnixNano: ns(from),
  endTimeUnixNano: ns(to),
  ...(error ? { status: { code: 2 } } : {}),
});
const resource = (role: string) => ({ attributes: [{ key: 'oncely.role', value: { stringValue: role } }] });

const trace: OtlpTrace = {
  resourceSpans: [
    { resource: resource('api'), scopeSpans: [{ spans: [span('aa00000000000001', 'POST /v1/uploads', 0, 450)] }] },
    {
      resource: resource('worker'),
      scopeSpans: [
        {
          spans: [
            // Ids as base64, as some gateways send them: the same spans.
            span(
              Buffer.from('bb00000000000002', 'hex').toString('base64'),
              'RunActivity:commitUpload',
              220,
              370,
              Buffer.from('aa00000000000001', 'hex').toString('base64'),
            ),
            span('cc00000000000003', 'S3.HeadObject', 225, 230, 'bb00000000000002', true),
            span('dd00000000000004', 'RunActivity:runStep', 500, 1750, 'ee00000000000099'),
          ],
        },
      ],
    },
  ],
};

describe('oncely trace', () => {
  it('reads spans with hex or base64 ids, their role, duration and status', () => {
    expect(spansOf(trace).map((s) => [s.id, s.parentId, s.where, s.durationMs, s.error])).toEqual([
      ['aa00000000000001', null, 'api', 450, false],
      ['bb00000000000002', 'aa00000000000001', 'worker', 150, false],
      ['cc00000000000003', 'bb00000000000002', 'worker', 5, true],
      ['dd00000000000004', 'ee00000000000099', 'worker', 1250, false],
    ]);
  });

  it('prints children under their parent in start order; a span whose parent never arrived is a root of its own', () => {
    const lines = renderTraceTree(spansOf(trace)).split('\n');
    expect(lines.map((l) => l.replace(/\s+/g, ' ').trim())).toEqual([
      'POST /v1/uploads 450.0 ms +0.00 ms api',
      'RunActivity:commitUpload 150.0 ms +220.0 ms worker',
      'S3.HeadObject !error 5.00 ms +225.0 ms worker',
      'RunActivity:runStep 1.25 s +500.0 ms worker',
    ]);
    expect(lines[1]).toMatch(/^ {2}RunActivity/);
    expect(lines[2]).toMatch(/^ {4}S3\.HeadObject/);
    expect(lines[3]).toMatch(/^RunActivity:runStep/);
  });
});

describe('the exporter the standard variables choose', () => {
  it('is off without an endpoint, or when the SDK or the traces exporter is turned off', () => {
    expect(tracesWanted({})).toBe(false);
    expect(tracesWanted({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318' })).toBe(true);
    expect(tracesWanted({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://c:4318/v1/traces' })).toBe(true);
    expect(tracesWanted({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_SDK_DISABLED: 'true' })).toBe(false);
    expect(tracesWanted({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_TRACES_EXPORTER: 'none' })).toBe(false);
  });

  it('sends protobuf by default and JSON when asked; refuses gRPC with a clear message', async () => {
    const base = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318/' };
    expect(await otlpExporter(base)).toBeInstanceOf(ProtoExporter);
    expect(await otlpExporter({ ...base, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' })).toBeInstanceOf(JsonExporter);
    expect(
      await otlpExporter({ ...base, OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/protobuf', OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' }),
    ).toBeInstanceOf(ProtoExporter);
    await expect(otlpExporter({ ...base, OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' })).rejects.toThrow(/use http\/protobuf or http\/json/);
  });
});

describe('whether a run or an activity is traced (its Temporal headers)', () => {
  const header = (carrier: Record<string, string>) => ({ '_tracer-data': defaultPayloadConverter.toPayload(carrier) });
  it('only with a sampled W3C context: not without a header, with an empty carrier, an unsampled or a malformed one', () => {
    expect(carriesSampledTrace(header({ traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' }))).toBe(true);
    expect(carriesSampledTrace(header({ traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00' }))).toBe(false);
    expect(carriesSampledTrace(header({ traceparent: 'not a traceparent' }))).toBe(false);
    expect(carriesSampledTrace(header({}))).toBe(false);
    expect(carriesSampledTrace({})).toBe(false);
    expect(carriesSampledTrace(undefined)).toBe(false);
  });
});
