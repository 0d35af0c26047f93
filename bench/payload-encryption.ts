// What payload encryption costs: new 4 KiB uploads and replays of one key with
// PAYLOAD_ENCRYPTION off and on (bench/lib/modes.ts), CPU per upload by component. The
// codec's work is in the API (sealing the run's input, its data key made) and the worker
// (opening and sealing every activation's payloads); PostgreSQL pays the key rows. A twin of
// the off mode (the same settings, processes of its own) shows what the method cannot tell
// apart: the ratio of two identical modes.
import { compareModes, ratioPerRound, ratioSideBySide, round2 } from './lib/modes';
import type { BenchServices } from './lib/services';

export async function payloadEncryptionOverhead(services: BenchServices, opts: { seconds: number; rounds: number; connections: number }) {
  const { off, offTwin, on, onKeyReads } = await compareModes(
    services,
    {
      off: { PAYLOAD_ENCRYPTION: 'false' },
      offTwin: { PAYLOAD_ENCRYPTION: 'false' },
      on: { PAYLOAD_ENCRYPTION: 'true' },
      // The worker reads each run's key by id instead of hearing it announced (migration 028).
      onKeyReads: { PAYLOAD_ENCRYPTION: 'true', PAYLOAD_KEY_LISTEN: 'false' },
    },
    { ...opts, tag: 'codec', sideBySide: { rounds: opts.rounds * 4, modes: ['off', 'offTwin', 'on'] } },
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
    // The same with all modes taking uploads at once, and the twin's figure for comparison.
    cpuRatioSideBySide: JSON.stringify(ratioSideBySide(on, off)),
    twinRatioByRound: JSON.stringify(ratioPerRound(offTwin, off)),
    twinRatioSideBySide: JSON.stringify(ratioSideBySide(offTwin, off)),
    peakRssMiB: JSON.stringify({ off: off.peakRssMiB, offTwin: offTwin.peakRssMiB, on: on.peakRssMiB, onKeyReads: onKeyReads.peakRssMiB }),
    cpuMsSideBySide: JSON.stringify({ off: off.cpuMsSideBySide, offTwin: offTwin.cpuMsSideBySide, on: on.cpuMsSideBySide }),
    onKeyReadsCpuMsPerUpload: JSON.stringify(onKeyReads.cpuMsPerUpload),
    cpuRatioKeyReads: round2(onKeyReads.apiWorkerCpuMsPerUpload / off.apiWorkerCpuMsPerUpload),
    newRatio: round2(on.newRps / off.newRps),
    replayRatio: round2(on.replayRps / off.replayRps),
  };
}
