// A span per S3 call, as a middleware on the client (the OpenTelemetry AWS SDK
// instrumentation patches modules this SDK version no longer has): the operation as the name,
// the bucket, the HTTP status; never the object key (it carries the idempotency key's hash).
import { SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import type { S3Client } from '@aws-sdk/client-s3';

const tracer = trace.getTracer('oncely-s3');

export function traceS3Calls(client: S3Client): S3Client {
  client.middlewareStack.add(
    (next, ctx) => async (args) => {
      // Only within a recorded span: a call of a request or run the sampler left out, or of
      // none (housekeeping), starts no trace of its own.
      if (!trace.getActiveSpan()?.isRecording()) return next(args);
      const operation = (ctx.commandName ?? 'Command').replace(/Command$/, '');
      const bucket = (args.input as { Bucket?: string }).Bucket;
      return tracer.startActiveSpan(
        `S3.${operation}`,
        {
          kind: SpanKind.CLIENT,
          attributes: {
            'rpc.system': 'aws-api',
            'rpc.service': 'S3',
            'rpc.method': operation,
            ...(bucket ? { 'aws.s3.bucket': bucket } : {}),
          },
        },
        async (span) => {
          try {
            const out = await next(args);
            const status = (out.response as { statusCode?: number } | undefined)?.statusCode;
            if (status) span.setAttribute('http.response.status_code', status);
            return out;
          } catch (err) {
            const status = (err as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
            if (status) span.setAttribute('http.response.status_code', status);
            span.setAttribute('error.type', (err as { name?: string }).name ?? 'Error');
            span.setStatus({ code: SpanStatusCode.ERROR });
            throw err;
          } finally {
            span.end();
          }
        },
      );
    },
    { step: 'initialize', name: 'oncelyTraceS3', override: true },
  );
  return client;
}
