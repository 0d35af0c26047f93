// New 4 KiB uploads and replays of one key under several settings of one process
// environment (tracing off / on, payload encryption off / on), each mode its own API and
// worker process on its own task queues over the same dev server, store and database: requests
// per second and CPU per upload by component. The modes take turns within each round, each
// round starting with the next mode, so drift in the machine and the slot a mode runs in hit
// them alike; `ratioPerRound` pairs each round's figures, so a ratio's spread is printed too.
// With `sideBySide`, rounds follow in which the modes it names take new uploads at the same
// time, each on its share of the connections: the machine's state then weighs on them alike
// within a round, which pairs far tighter than turns seconds apart (`ratioSideBySide`).
import { createHash, randomUUID } from 'node:crypto';
import { cpuMsPerOp, cpuSnapshot, medianCpu } from './cpu';
import { httpLoad, type LoadResult } from './load';
import { peakRssMiB, startOncelyProcess, type BenchServices } from './services';
import { median } from './stats';

const BODY = Buffer.alloc(4096, 0x62);
const BODY_SHA = createHash('sha256').update(BODY).digest('hex');

export interface ModeFigures {
  newRps: number;
  replayRps: number;
  /** CPU ms per new upload, by component (api, worker and the shared services). */
  cpuMsPerUpload: Record<string, number>;
  /** Oncely's own processes (API + worker) per new upload. */
  apiWorkerCpuMsPerUpload: number;
  /** The same, round by round (in the order the rounds ran). */
  apiWorkerCpuMsPerRound: number[];
  /** The same in the side-by-side rounds (empty without them). */
  apiWorkerCpuMsSideBySide: number[];
  /** API and worker CPU ms per new upload in the side-by-side rounds (the median of each). */
  cpuMsSideBySide: Record<string, number>;
  /** The API's and the worker's peak resident set size over the whole run. */
  peakRssMiB: Record<'api' | 'worker', number>;
}

export async function compareModes<M extends string>(
  services: BenchServices,
  modes: Record<M, Record<string, string>>,
  opts: { seconds: number; rounds: number; connections: number; tag: string; sideBySide?: { rounds: number; modes: NoInfer<M>[] } },
): Promise<Record<M, ModeFigures>> {
  const names = Object.keys(modes) as M[];
  const stacks = {} as Record<
    M,
    { api: Awaited<ReturnType<typeof startOncelyProcess>>; worker: Awaited<ReturnType<typeof startOncelyProcess>> }
  >;
  try {
    for (const mode of names) {
      const queues = {
        TASK_QUEUE_UPLOADS: `uploads-${opts.tag}-${mode}`,
        TASK_QUEUE_TRANSCODE: `transcode-${opts.tag}-${mode}`,
        HOUSEKEEPING_SCHEDULES: 'false',
      };
      stacks[mode] = {
        api: await startOncelyProcess(services, 'api', { ...modes[mode], ...queues }),
        worker: await startOncelyProcess(services, 'worker', { ...modes[mode], ...queues }),
      };
    }
    const headers = (key: string) => ({
      authorization: `Bearer ${services.apiKey}`,
      'idempotency-key': key,
      'content-type': 'application/octet-stream',
      'x-file-sha256': BODY_SHA,
    });
    const results = Object.fromEntries(
      names.map((m) => [
        m,
        {
          fresh: [] as LoadResult[],
          replay: [] as LoadResult[],
          cpu: [] as Record<string, number>[],
          together: [] as Record<string, number>[],
        },
      ]),
    ) as Record<M, { fresh: LoadResult[]; replay: LoadResult[]; cpu: Record<string, number>[]; together: Record<string, number>[] }>;
    const run = Date.now();
    const newUploads = (mode: M, round: number | string, connections: number) =>
      httpLoad({
        url: `${stacks[mode].api.url}/v1/uploads`,
        method: 'POST',
        headers: headers(`bench-${opts.tag}-${run}-${mode}-${round}-[<id>]`),
        body: BODY,
        idReplacement: true,
        connections,
        duration: opts.seconds,
      });
    for (let round = 0; round < opts.rounds; round++) {
      for (const mode of [...names.slice(round % names.length), ...names.slice(0, round % names.length)]) {
        const { api, worker } = stacks[mode];
        const pids = { api: api.proc.child.pid, worker: worker.proc.child.pid, ...services.pids };
        const before = cpuSnapshot(pids);
        const fresh = await newUploads(mode, round, opts.connections);
        results[mode].fresh.push(fresh);
        results[mode].cpu.push(cpuMsPerOp(before, cpuSnapshot(pids), fresh.statuses['201'] ?? 0));
        const key = `bench-${opts.tag}-replay-${randomUUID()}`;
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
    const together = opts.sideBySide?.modes ?? [];
    const share = Math.max(1, Math.floor(opts.connections / Math.max(1, together.length)));
    for (let round = 0; round < (opts.sideBySide?.rounds ?? 0); round++) {
      const before = together.map((m) => cpuSnapshot({ api: stacks[m].api.proc.child.pid, worker: stacks[m].worker.proc.child.pid }));
      const loads = await Promise.all(together.map((m) => newUploads(m, `together-${round}`, share)));
      together.forEach((m, i) => {
        const after = cpuSnapshot({ api: stacks[m].api.proc.child.pid, worker: stacks[m].worker.proc.child.pid });
        const { api, worker } = cpuMsPerOp(before[i]!, after, loads[i]!.statuses['201'] ?? 0);
        results[m].together.push({ api, worker });
      });
    }
    const own = (c: Record<string, number>) => Math.round(((c.api ?? 0) + (c.worker ?? 0)) * 10) / 10;
    const peaks = {} as Record<M, Record<'api' | 'worker', number>>;
    for (const m of names)
      peaks[m] = {
        api: Math.round(await peakRssMiB(stacks[m].api.proc.child.pid!)),
        worker: Math.round(await peakRssMiB(stacks[m].worker.proc.child.pid!)),
      };
    return Object.fromEntries(
      names.map((m) => [
        m,
        {
          peakRssMiB: peaks[m],
          newRps: median(results[m].fresh.map((r) => r.rps)),
          replayRps: median(results[m].replay.map((r) => r.rps)),
          cpuMsPerUpload: medianCpu(results[m].cpu),
          apiWorkerCpuMsPerUpload: median(results[m].cpu.map(own)),
          apiWorkerCpuMsPerRound: results[m].cpu.map(own),
          apiWorkerCpuMsSideBySide: results[m].together.map(own),
          cpuMsSideBySide: results[m].together.length ? medianCpu(results[m].together) : {},
        },
      ]),
    ) as Record<M, ModeFigures>;
  } finally {
    for (const s of Object.values(stacks) as {
      api: { proc: { stop(): Promise<unknown> } };
      worker: { proc: { stop(): Promise<unknown> } };
    }[])
      await Promise.all([s.api.proc.stop(), s.worker.proc.stop()]);
  }
}

export const round2 = (n: number) => Math.round(n * 100) / 100;

/** `ratioPerRound` over the side-by-side rounds. */
export function ratioSideBySide(mode: ModeFigures, base: ModeFigures): ReturnType<typeof ratioPerRound> {
  return ratioPerRound(
    { ...mode, apiWorkerCpuMsPerRound: mode.apiWorkerCpuMsSideBySide },
    { ...base, apiWorkerCpuMsPerRound: base.apiWorkerCpuMsSideBySide },
  );
}

/**
 * One mode's API + worker CPU over another's, round by round (each pair measured in the same
 * round, seconds apart): the median and the range, for a target one figure cannot settle.
 */
export function ratioPerRound(mode: ModeFigures, base: ModeFigures): { median: number; min: number; max: number; rounds: number[] } {
  const rounds = mode.apiWorkerCpuMsPerRound.map((ms, i) => round2(ms / base.apiWorkerCpuMsPerRound[i]!));
  return { median: round2(median(rounds)), min: Math.min(...rounds), max: Math.max(...rounds), rounds };
}
