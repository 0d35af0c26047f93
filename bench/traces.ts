// What tracing costs. New 4 KiB uploads and replays of one key, with tracing off, on at 10 %
// (parentbased_traceidratio 0.1) and on at 100 % (the default sampler), API and worker in
// their own processes sending to a local Jaeger v2 (bench/lib/modes.ts): requests per second
// and CPU per upload by component (the collector's CPU is not Oncely's and not counted).
import path from 'node:path';
import getPort from 'get-port';
import { startJaeger } from '../src/devstack/jaeger';
import { compareModes, round2 } from './lib/modes';
import type { BenchServices } from './lib/services';

export async function tracingOverhead(services: BenchServices, opts: { seconds: number; rounds: number; connections: number }) {
  const [otlpPort, queryPort, grpcQueryPort, healthPort] = await Promise.all([1, 2, 3, 4].map(() => getPort({ host: '127.0.0.1' })));
  const jaeger = await startJaeger({
    dir: path.join(services.dir, 'jaeger'),
    otlpPort: otlpPort!,
    queryPort: queryPort!,
    grpcQueryPort: grpcQueryPort!,
    healthPort: healthPort!,
  });
  try {
    const otlp = { OTEL_EXPORTER_OTLP_ENDPOINT: jaeger.otlpEndpoint };
    const { off, at10, at100 } = await compareModes(
      services,
      {
        off: {},
        at10: { ...otlp, OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '0.1' },
        at100: { ...otlp, OTEL_TRACES_SAMPLER: 'parentbased_always_on' },
      },
      { ...opts, tag: 'traces' },
    );
    return {
      scenario: 'tracing overhead (new 4 KiB uploads, replays)',
      rounds: opts.rounds,
      connections: opts.connections,
      offNewRps: off.newRps,
      at10NewRps: at10.newRps,
      at100NewRps: at100.newRps,
      offReplayRps: off.replayRps,
      at10ReplayRps: at10.replayRps,
      at100ReplayRps: at100.replayRps,
      offCpuMsPerUpload: JSON.stringify(off.cpuMsPerUpload),
      at10CpuMsPerUpload: JSON.stringify(at10.cpuMsPerUpload),
      at100CpuMsPerUpload: JSON.stringify(at100.cpuMsPerUpload),
      // Target: at 10 %, at most 5 % more of Oncely's CPU per new upload than with tracing off.
      cpuRatio10: round2(at10.apiWorkerCpuMsPerUpload / off.apiWorkerCpuMsPerUpload),
      cpuRatio100: round2(at100.apiWorkerCpuMsPerUpload / off.apiWorkerCpuMsPerUpload),
      replayRatio10: round2(at10.replayRps / off.replayRps),
      replayRatio100: round2(at100.replayRps / off.replayRps),
    };
  } finally {
    await jaeger.stop();
  }
}
