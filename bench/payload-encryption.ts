// What payload encryption costs: new 4 KiB uploads and replays of one key with
// PAYLOAD_ENCRYPTION off and on (bench/lib/modes.ts), CPU per upload by component. The
// codec's work is in the API (sealing the run's input, its data key made) and the worker
// (opening and sealing every activation's payloads); PostgreSQL pays the key rows.
import { compareModes, ratioPerRound, round2 } from './lib/modes';
import type { BenchServices } from './lib/services';

export async function payloadEncryptionOverhead(services: BenchServices, opts: { seconds: number; rounds: number; connections: number }) {
  const { off, on, onKeyReads } = await compareModes(
    services,
    {
      off: { PAYLOAD_ENCRYPTION: 'false' },
      on: { PAYLOAD_ENCRYPTION: 'true' },
      // The worker reads each run's key by id instead of hearing it announced (migration 028).
      onKeyReads: { PAYLOAD_ENCRYPTION: 'true', PAYLOAD_KEY_LISTEN: 'false' },
    },
    { ...opts, tag: 'codec' },
  );
  return {
    scenario: 'payload encryption overhead (new 4 KiB uploads, replays)',
    rounds: opts.rounds,
    connections: opts.connections,
    offNewRps: off.newRps,
    onNewRps: on.newRps,
    offReplayRps: off.replayRps,
    onReplayRps: on.replayRps,
    offCpuMsPerUpload: JSON.stringify(off.cpuMsPerUpload),
    onCpuMsPerUpload: JSON.stringify(on.cpuMsPerUpload),
    // Target: at most 5 % more of Oncely's CPU (API + worker) per new upload with the codec on.
    cpuRatio: round2(on.apiWorkerCpuMsPerUpload / off.apiWorkerCpuMsPerUpload),
    // The same, paired round by round: the median and the range show the run's noise.
    cpuRatioByRound: JSON.stringify(ratioPerRound(on, off)),
    onKeyReadsCpuMsPerUpload: JSON.stringify(onKeyReads.cpuMsPerUpload),
    cpuRatioKeyReads: round2(onKeyReads.apiWorkerCpuMsPerUpload / off.apiWorkerCpuMsPerUpload),
    newRatio: round2(on.newRps / off.newRps),
    replayRatio: round2(on.replayRps / off.replayRps),
  };
}
