// #42's levers on the worker's activation path that are settings, each an A/B against the
// bench's usual processes in one run (bench/lib/modes.ts; the API logs at warn, the worker at
// info): no sticky cache (`maxCachedWorkflows: 0`, every workflow task replays the run's
// history from the start), and the API at info as in production (its access log line per
// request; the worker logs nothing per upload at info). Oncely's API + worker CPU per new
// upload, paired round by round.
import { compareModes, ratioPerRound, round2 } from './lib/modes';
import type { BenchServices } from './lib/services';

export async function workerLevers(services: BenchServices, opts: { seconds: number; rounds: number; connections: number }) {
  const { defaults, noStickyCache, infoLogs } = await compareModes(
    services,
    {
      defaults: {},
      noStickyCache: { WORKER_TUNING: JSON.stringify({ maxCachedWorkflows: 0 }) },
      infoLogs: { LOG_LEVEL: 'info' },
    },
    { ...opts, tag: 'levers' },
  );
  return {
    scenario: "worker levers (new 4 KiB uploads): the sticky cache, the API's access log",
    rounds: opts.rounds,
    connections: opts.connections,
    defaultsNewRps: defaults.newRps,
    noStickyCacheNewRps: noStickyCache.newRps,
    infoLogsNewRps: infoLogs.newRps,
    defaultsCpuMsPerUpload: JSON.stringify(defaults.cpuMsPerUpload),
    noStickyCacheCpuMsPerUpload: JSON.stringify(noStickyCache.cpuMsPerUpload),
    infoLogsCpuMsPerUpload: JSON.stringify(infoLogs.cpuMsPerUpload),
    noStickyCacheCpuRatio: round2(noStickyCache.apiWorkerCpuMsPerUpload / defaults.apiWorkerCpuMsPerUpload),
    noStickyCacheCpuRatioByRound: JSON.stringify(ratioPerRound(noStickyCache, defaults)),
    infoLogsCpuRatio: round2(infoLogs.apiWorkerCpuMsPerUpload / defaults.apiWorkerCpuMsPerUpload),
    infoLogsCpuRatioByRound: JSON.stringify(ratioPerRound(infoLogs, defaults)),
  };
}
