// What tracing costs. New 4 KiB uploads and replays of one key, with tracing off, on at 10 %
// (parentbased_traceidratio 0.1) and on at 100 % (the default sampler), each against the same
// dev server and store, API and worker in their own processes sending to a local Jaeger v2:
// requests per second and CPU per upload by component (the collector's CPU is not Oncely's
// and not counted). The
// modes take turns within each round, so drift in the machine hits all three alike.
import { createHash, randomUUID } from 'node:crypto';
import path from 'node:path';
import getPort from 'get-port';
import { startJaeger } from '../src/devstack/jaeger';
import { cpuMsPerOp, cpuSnapshot, medianCpu } from './lib/cpu';
import { httpLoad, type LoadResult } from './lib/load';
import { startOncelyProcess, type BenchServices } from './lib/services';
import { median } from './lib/stats';

const BODY = Buffer.alloc(4096, 0x62);
const BODY_SHA = createHash('sha256').update(BODY).digest('hex');

const MODES = {
  off: {},
  '10%': { OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '0.1' },
  '100%': { OTEL_TRACES_SAMPLER: 'parentbased_always_on' },
} as const;
type Mode = keyof typeof MODES;

export async function tracingOverhead(services: BenchServices, opts: { seconds: number; rounds: number; connections: number }) {
  const [otlpPort, queryPort, grpcQueryPort, healthPort] = await Promise.all([1, 2, 3, 4].map(() => getPort({ host: '127.0.0.1' })));
  const jaeger = await startJaeger({
    dir: path.join(services.dir, 'jaeger'),
    otlpPort: otlpPort!,
    queryPort: queryPort!,
    grpcQueryPort: grpcQueryPort!,
    healthPort: healthPort!,
  });
  const stacks = {} as Record<
    Mode,
    { api: Awaited<ReturnType<typeof startOncelyProcess>>; worker: Awaited<ReturnType<typeof startOncelyProcess>> }
  >;
  try {
    for (const mode of Object.keys(MODES) as Mode[]) {
      const env = mode === 'off' ? {} : { OTEL_EXPORTER_OTLP_ENDPOINT: jaeger.otlpEndpoint, ...MODES[mode] };
      // Each mode its own task queue: its API's uploads run on its own worker.
      const queues = {
        TASK_QUEUE_UPLOADS: `uploads-traces-${mode}`,
        TASK_QUEUE_TRANSCODE: `transcode-traces-${mode}`,
        HOUSEKEEPING_SCHEDULES: 'false',
      };
      stacks[mode] = {
        api: await startOncelyProcess(services, 'api', { ...env, ...queues }),
        worker: await startOncelyProcess(services, 'worker', { ...env, ...queues }),
      };
    }
    const headers = (key: string) => ({
      authorization: `Bearer ${services.apiKey}`,
      'idempotency-key': key,
      'content-type': 'application/octet-stream',
      'x-file-sha256': BODY_SHA,
    });
    const results = Object.fromEntries(
      (Object.keys(MODES) as Mode[]).map((m) => [
        m,
        { fresh: [] as LoadResult[], replay: [] as LoadResult[], cpu: [] as Record<string, number>[] },
      ]),
    ) as Record<Mode, { fresh: LoadResult[]; replay: LoadResult[]; cpu: Record<string, number>[] }>;
    const run = Date.now();
    for (let round = 0; round < opts.rounds; round++) {
      for (const mode of Object.keys(MODES) as Mode[]) {
        const { api, worker } = stacks[mode];
        const pids = { api: api.proc.child.pid, worker: worker.proc.child.pid, ...services.pids };
        const before = cpuSnapshot(pids);
        const fresh = await httpLoad({
          url: `${api.url}/v1/uploads`,
          method: 'POST',
          headers: headers(`bench-traces-${run}-${mode}-${round}-[<id>]`),
          body: BODY,
          idReplacement: true,
          connections: opts.connections,
          duration: opts.seconds,
        });
        results[mode].fresh.push(fresh);
        results[mode].cpu.push(cpuMsPerOp(before, cpuSnapshot(pids), fresh.statuses['201'] ?? 0));
        const key = `bench-traces-replay-${randomUUID()}`;
        const first = await fetch(`${api.url}/v1/uploads`, { method: 'POST', headers: headers(key), body: BODY });
        if (first.status !== 201) throw new Error(`replay setup failed: ${first.status} ${await first.text()}`);
        results[mode].replay.push(
          await httpLoad({
            url: `${api.url}/v1/uploads`,
            method: 'POST',
            headers: headers(key),
            body: BODY,
            connections: opts.connections,
            duration: opts.seconds,
          }),
        );
      }
    }
    const summary = (mode: Mode) => {
      const cpu = medianCpu(results[mode].cpu);
      const own = (c: Record<string, number>) => Math.round(((c.api ?? 0) + (c.worker ?? 0)) * 10) / 10;
      return {
        newRps: median(results[mode].fresh.map((r) => r.rps)),
        replayRps: median(results[mode].replay.map((r) => r.rps)),
        cpuMsPerUpload: cpu,
        // Oncely's own processes: what tracing adds to them (the collector is not Oncely's).
        apiWorkerCpuMsPerUpload: median(results[mode].cpu.map(own)),
      };
    };
    const off = summary('off');
    const at10 = summary('10%');
    const at100 = summary('100%');
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
    for (const s of Object.values(stacks)) await Promise.all([s.api.proc.stop(), s.worker.proc.stop()]);
    await jaeger.stop();
  }
}

const round2 = (n: number) => Math.round(n * 100) / 100;
