// A local trace backend: Jaeger v2 (the pinned tool, scripts/tools.sh) with an OTLP/HTTP
// receiver, in-memory storage and its query API, all on loopback ports of our choosing. Built
// from the Go module its web UI is a placeholder; `oncely trace` and the tests read the query
// API (/api/v3).
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { startProcess, waitUntil, type ManagedProcess } from './process';
import { toolPath } from './tools';

export interface Jaeger {
  /** OTEL_EXPORTER_OTLP_ENDPOINT for the processes that send to it. */
  otlpEndpoint: string;
  /** The query API's base (GET /api/v3/traces…). */
  queryUrl: string;
  process: ManagedProcess;
  stop(): Promise<void>;
}

export interface JaegerOptions {
  dir: string;
  otlpPort: number;
  queryPort: number;
  grpcQueryPort: number;
  healthPort: number;
  dieWithParent?: boolean;
}

export async function startJaeger(o: JaegerOptions): Promise<Jaeger> {
  mkdirSync(o.dir, { recursive: true });
  const config = path.join(o.dir, 'jaeger.yaml');
  writeFileSync(config, jaegerConfig(o));
  const proc = startProcess(toolPath('jaeger'), ['--config', config], {
    logFile: path.join(o.dir, 'jaeger.log'),
    ...(o.dieWithParent ? { dieWithParent: true } : {}),
  });
  const queryUrl = `http://127.0.0.1:${o.queryPort}`;
  await waitUntil('jaeger', async () => (await fetch(`http://127.0.0.1:${o.healthPort}/status`)).ok, { proc, timeoutMs: 60_000 });
  return { otlpEndpoint: `http://127.0.0.1:${o.otlpPort}`, queryUrl, process: proc, stop: () => proc.stop() };
}

/** All-in-one with only what Oncely uses: OTLP over HTTP in, memory storage, the query API, a health check. */
function jaegerConfig(o: JaegerOptions): string {
  return `service:
  extensions: [jaeger_storage, jaeger_query, healthcheckv2]
  pipelines:
    traces:
      receivers: [otlp]
      processors: [batch]
      exporters: [jaeger_storage_exporter]
  telemetry:
    metrics:
      level: none
    logs:
      level: warn
extensions:
  healthcheckv2:
    use_v2: true
    http:
      endpoint: 127.0.0.1:${o.healthPort}
  jaeger_storage:
    backends:
      memstore:
        memory:
          max_traces: 100000
  jaeger_query:
    storage:
      traces: memstore
    http:
      endpoint: 127.0.0.1:${o.queryPort}
    grpc:
      endpoint: 127.0.0.1:${o.grpcQueryPort}
receivers:
  otlp:
    protocols:
      http:
        endpoint: 127.0.0.1:${o.otlpPort}
processors:
  batch:
    timeout: 200ms
exporters:
  jaeger_storage_exporter:
    trace_storage: memstore
`;
}
