// Each request's identity: its X-Request-Id (the caller's when it is a sane token, else a new
// one), answered and logged; and its server span, continuing an incoming `traceparent`,
// named by the route template (never the path's ids, the key or a file name), with the stable
// HTTP semantic-convention attributes. With tracing off the span records nothing.
import { randomUUID } from 'node:crypto';
import { context, propagation, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Span, type TextMapGetter } from '@opentelemetry/api';
import type { Context, MiddlewareHandler } from 'hono';
import type { AppEnv } from '../http/env';
import { leftOutContext, spanContextOf } from './context';
import { tracing } from './tracing';

const tracer = trace.getTracer('oncely-http');

/** A caller's request id is kept when it is 1 to 128 visible ASCII characters without separators that would break a log line. */
const REQUEST_ID = /^[A-Za-z0-9._:/+=@-]{1,128}$/;

const headersGetter: TextMapGetter<Headers> = {
  keys: (carrier) => [...carrier.keys()],
  get: (carrier, key) => carrier.get(key) ?? undefined,
};

/**
 * `sessionTrace` gives the trace a session's later request continues when the caller sent
 * none (the traceparent its creating request had): a tus upload's or a direct upload's
 * requests and its commit are one trace.
 */
export function requestTrace(sessionTrace?: (path: string) => Promise<string | null>): MiddlewareHandler<AppEnv> {
  return async function requestTrace(c, next) {
    const given = c.req.header('x-request-id');
    const requestId = given && REQUEST_ID.test(given) ? given : randomUUID();
    c.set('requestId', requestId);
    let parent = propagation.extract(ROOT_CONTEXT, c.req.raw.headers, headersGetter);
    if (sessionTrace && tracing().enabled && !trace.getSpanContext(parent)) {
      const session = spanContextOf(await sessionTrace(c.req.path).catch(() => null));
      if (session) parent = trace.setSpanContext(ROOT_CONTEXT, session);
    }
    const span = tracer.startSpan(
      c.req.method,
      {
        kind: SpanKind.SERVER,
        attributes: {
          'http.request.method': c.req.method,
          'url.scheme': 'http',
          'oncely.request_id': requestId,
          ...(c.req.header('user-agent') ? { 'user_agent.original': c.req.header('user-agent') } : {}),
        },
      },
      parent,
    );
    // A request the sampler left out runs without a span: below it nothing traces.
    const recording = span.isRecording();
    try {
      await context.with(recording ? trace.setSpan(parent, span) : leftOutContext(span.spanContext()), next);
    } finally {
      c.res.headers.set('X-Request-Id', requestId);
      if (recording) endServerSpan(c, span);
    }
  };
}

/** Names the server span by its route template and records the answer. */
function endServerSpan(c: Context<AppEnv>, span: Span): void {
  const route = c.req.routePath;
  span.updateName(`${c.req.method} ${route}`);
  span.setAttribute('http.route', route);
  span.setAttribute('http.response.status_code', c.res.status);
  if (c.res.status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
  const code = c.get('errorCode');
  if (code) span.setAttribute('error.type', code);
  span.end();
}
