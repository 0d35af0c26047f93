// OpenTelemetry traces, configured only by the standard OTEL_* variables and off unless an
// OTLP endpoint is set. Spans leave through a bounded queue in batches: a collector that is
// down or slow never blocks or fails an upload; what could not be sent is counted
// (oncely_trace_spans_dropped_total). Outgoing HTTP (undici and fetch) and `pg` queries are
// instrumented by their OpenTelemetry libraries; the HTTP server (src/telemetry/request-trace.ts),
// the S3 clients (s3.ts) and the Temporal client and worker (temporal.ts) where they are built.
import { createRequire } from 'node:module';
import { diag, DiagLogLevel } from '@opentelemetry/api';
import { ExportResultCode, type ExportResult } from '@opentelemetry/core';
import { registerInstrumentations } from '@opentelemetry/instrumentation';
import { PgInstrumentation } from '@opentelemetry/instrumentation-pg';
import { UndiciInstrumentation } from '@opentelemetry/instrumentation-undici';
import { envDetectorSync, Resource } from '@opentelemetry/resources';
import {
  BatchSpanProcessor,
  NodeTracerProvider,
  NoopSpanProcessor,
  type ReadableSpan,
  type SpanExporter,
  type SpanProcessor,
} from '@opentelemetry/sdk-trace-node';
import type { Attributes, Span, Context } from '@opentelemetry/api';
import { createHmac, randomBytes } from 'node:crypto';
import { metrics } from '../metrics';
import { version } from '../version';

export interface Tracing {
  enabled: boolean;
  /** Where finished spans go: the workflow sandbox's spans too (src/telemetry/temporal.ts). */
  processor: SpanProcessor;
  resource: Resource;
  /** Sends what is queued (bounded by the exporter's timeout), then stops. */
  shutdown(): Promise<void>;
}

const disabled: Tracing = {
  enabled: false,
  processor: new NoopSpanProcessor(),
  resource: Resource.empty(),
  shutdown: async () => {},
};

let current: Tracing = disabled;

/** The process's tracing (disabled until startTracing). */
export function tracing(): Tracing {
  return current;
}

/** Whether the environment asks for traces: an OTLP endpoint, and the SDK not disabled. */
export function tracesWanted(env: NodeJS.ProcessEnv): boolean {
  if (env.OTEL_SDK_DISABLED === 'true' || env.OTEL_TRACES_EXPORTER === 'none') return false;
  return Boolean(env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT || env.OTEL_EXPORTER_OTLP_ENDPOINT);
}

/**
 * Starts tracing for this process once, when the environment asks for it; `role` names the
 * process in its resource (`oncely.role`). OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES win.
 */
export async function startTracing(role: string, env: NodeJS.ProcessEnv = process.env, exporter?: SpanExporter): Promise<Tracing> {
  if (current.enabled || (!exporter && !tracesWanted(env))) return current;
  diag.setLogger(
    { error: () => {}, warn: () => {}, info: () => {}, debug: () => {}, verbose: () => {} },
    DiagLogLevel.NONE, // export failures are counted, not logged per batch
  );
  const resource = Resource.default()
    .merge(new Resource({ 'service.name': 'oncely', 'service.version': version, 'oncely.role': role }))
    .merge(envDetectorSync.detect());
  const processor = new BoundedProcessor(exporter ?? (await otlpExporter(env)), env);
  const provider = new NodeTracerProvider({ resource, spanProcessors: [processor] });
  // The W3C trace context and baggage propagators, and an AsyncLocalStorage context manager.
  provider.register();
  registerInstrumentations({
    tracerProvider: provider,
    instrumentations: [
      new UndiciInstrumentation({
        // Only within a traced operation: a call of a run the sampler left out, or of none
        // (housekeeping), starts no trace and sends no traceparent.
        requireParentforSpans: true,
        // A URL's query may carry a signature or a token (presigned reads, webhook targets):
        // its values are never recorded.
        requestHook: (span, request) => {
          const q = request.path.indexOf('?');
          if (q < 0) return;
          span.setAttribute('url.full', `${request.origin}${request.path.slice(0, q)}`);
          span.setAttribute('url.query', redactedQuery(request.path.slice(q)));
        },
      }),
      // Statements are parameterised (src/db/queries): their text holds no values. Only queries
      // made within a traced operation are recorded (not the pool's own housekeeping).
      new PgInstrumentation({ requireParentSpan: true }),
    ],
  });
  patchLoadedModules();
  current = {
    enabled: true,
    processor,
    resource,
    shutdown: async () => {
      await provider.shutdown().catch(() => {});
      current = disabled;
    },
  };
  return current;
}

/**
 * The instrumentations patch modules as they are required; ours were loaded by ESM imports
 * before tracing started. Requiring them again (the same instances, from where their users
 * resolve them) hands each to its instrumentation, which patches it in place.
 */
function patchLoadedModules(): void {
  createRequire(import.meta.url)('pg');
}

/** `?a=1&b=2` as `?a=REDACTED&b=REDACTED`: the parameters' names, never their values. */
export function redactedQuery(search: string): string {
  const names = [...new URLSearchParams(search).keys()];
  return names.length ? `?${names.map((n) => `${encodeURIComponent(n)}=REDACTED`).join('&')}` : '';
}

/** OTLP over HTTP, as OTEL_EXPORTER_OTLP_(TRACES_)PROTOCOL says: http/protobuf (the default) or http/json. */
export async function otlpExporter(env: NodeJS.ProcessEnv): Promise<SpanExporter> {
  const protocol = env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ?? env.OTEL_EXPORTER_OTLP_PROTOCOL ?? 'http/protobuf';
  // The signal's own endpoint is used as given; the base endpoint gets the traces path.
  const url = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ?? `${env.OTEL_EXPORTER_OTLP_ENDPOINT!.replace(/\/$/, '')}/v1/traces`;
  if (protocol === 'http/json') return new (await import('@opentelemetry/exporter-trace-otlp-http')).OTLPTraceExporter({ url });
  if (protocol === 'http/protobuf') return new (await import('@opentelemetry/exporter-trace-otlp-proto')).OTLPTraceExporter({ url });
  throw new Error(`OTEL_EXPORTER_OTLP_PROTOCOL=${protocol} is not supported: use http/protobuf or http/json`);
}

/** An upload run's workflow ID (`upload/{tenant}/{key}`, src/temporal/ids.ts) inside an attribute's value. */
const UPLOAD_WORKFLOW_ID = /(upload\/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\/)(\S+)/g;
/** Spans name a key by a keyed hash: the same key reads the same within a process, and no key can be guessed from it. */
const SPAN_KEY_SECRET = randomBytes(32);

const keyHash = (key: string) => createHmac('sha256', SPAN_KEY_SECRET).update(key).digest('hex').slice(0, 32);
const redactString = (text: string) =>
  text.replace(UPLOAD_WORKFLOW_ID, (_m, head: string, key: string) => `${head}key-hmac:${keyHash(key)}`);
const isPrimitive = (v: unknown) => v === null || v === undefined || ['string', 'number', 'boolean'].includes(typeof v);

/**
 * The attributes as exported: `upload/{tenant}/{key}` as `upload/{tenant}/key-hmac:{hash}` in
 * every string, and only values OpenTelemetry allows (primitives and arrays of them): the
 * workflow sandbox's spans also carry the run's whole info as objects (its search attributes,
 * the key among them; its memo), which go.
 */
export function redactKeys(attributes: Attributes): Attributes {
  const out: Attributes = {};
  let changed = false;
  for (const [name, value] of Object.entries(attributes)) {
    let kept: unknown = value;
    if (typeof value === 'string') kept = redactString(value);
    else if (Array.isArray(value))
      kept = value.every(isPrimitive) ? value.map((v) => (typeof v === 'string' ? redactString(v) : v)) : undefined;
    else if (!isPrimitive(value)) kept = undefined;
    if (kept !== value && !(Array.isArray(kept) && (kept as unknown[]).every((v, i) => v === (value as unknown[])[i]))) changed = true;
    if (kept !== undefined) out[name] = kept as Attributes[string];
  }
  return changed ? out : attributes;
}

/**
 * The span as exported: no attribute (the Temporal interceptors' `temporalWorkflowId` and
 * `workflowId`, an event's, a link's) carries an Idempotency-Key. The span itself is left as it is.
 */
function withoutIdempotencyKeys(span: ReadableSpan): ReadableSpan {
  const attributes = redactKeys(span.attributes);
  const events = span.events.map((e) => (e.attributes ? { ...e, attributes: redactKeys(e.attributes) } : e));
  const links = span.links.map((l) => (l.attributes ? { ...l, attributes: redactKeys(l.attributes) } : l));
  const unchanged =
    attributes === span.attributes &&
    events.every((e, i) => e.attributes === span.events[i]!.attributes) &&
    links.every((l, i) => l.attributes === span.links[i]!.attributes);
  if (unchanged) return span;
  return Object.create(span, { attributes: { value: attributes }, events: { value: events }, links: { value: links } }) as ReadableSpan;
}

/**
 * A batch processor whose queue (spans waiting or being sent) is bounded by
 * OTEL_BSP_MAX_QUEUE_SIZE: past it a span is dropped, as is every span of a failed export,
 * and both are counted.
 */
class BoundedProcessor implements SpanProcessor {
  private readonly batch: BatchSpanProcessor;
  private readonly max: number;
  private pending = 0;

  constructor(exporter: SpanExporter, env: NodeJS.ProcessEnv) {
    this.max = Number(env.OTEL_BSP_MAX_QUEUE_SIZE) || 2048;
    const delay = Number(env.OTEL_BSP_SCHEDULE_DELAY);
    this.batch = new BatchSpanProcessor(
      {
        export: (spans: ReadableSpan[], done: (r: ExportResult) => void) =>
          exporter.export(spans, (result) => {
            this.pending -= spans.length;
            if (result.code !== ExportResultCode.SUCCESS) metrics.traceSpansDropped.inc({ reason: 'export_failed' }, spans.length);
            done(result);
          }),
        shutdown: () => exporter.shutdown(),
        ...(exporter.forceFlush ? { forceFlush: () => exporter.forceFlush!() } : {}),
      },
      { maxQueueSize: this.max, ...(delay > 0 ? { scheduledDelayMillis: delay } : {}) },
    );
  }

  onStart(span: Span, parent: Context): void {
    this.batch.onStart(span as never, parent);
  }

  onEnd(span: ReadableSpan): void {
    if (!(span.spanContext().traceFlags & 1)) return;
    if (this.pending >= this.max) {
      metrics.traceSpansDropped.inc({ reason: 'queue_full' });
      return;
    }
    this.pending++;
    this.batch.onEnd(withoutIdempotencyKeys(span));
  }

  forceFlush(): Promise<void> {
    return this.batch.forceFlush();
  }

  shutdown(): Promise<void> {
    return this.batch.shutdown();
  }
}
