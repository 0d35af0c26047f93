// Streamed bodies arrive as a flow of short-lived 64 KiB socket buffers. V8 frees their
// memory only when it collects their small JS wrappers, and it schedules that by external
// memory growth (~32 MiB), so a 1 GiB upload holds tens of MiB of dead buffers at its
// peaks. A young-generation collection every 4 MiB streamed keeps that floor low (every
// 8 MiB: 1 GiB download peak over start-up 26-29 MiB, upload peak 130 MiB; every 4 MiB:
// 14-20 and 122 MiB, the same throughput). It needs
// `node --expose-gc`, which bin/oncely-node (the Dockerfile's ENTRYPOINT and the benchmarks'
// launcher, which `npm start` runs too) sets, with a small young generation (4 MiB
// semi-spaces; see bin/oncely-node); without the flag this is a no-op.
// 1 GiB upload peak RSS: 199 → ~135 MiB (session 2).
const EVERY_BYTES = 4 * 1024 * 1024;

const gc = (globalThis as { gc?: (opts?: { type: 'minor' | 'major' }) => void }).gc;
let sinceLast = 0;

/** Notes `n` bytes streamed through this process; collects young garbage every 4 MiB. */
export function noteStreamedBytes(n: number): void {
  if (!gc) return;
  sinceLast += n;
  if (sinceLast < EVERY_BYTES) return;
  sinceLast = 0;
  gc({ type: 'minor' });
}

// Appends (tus, the draft) get only these young collections: a full one every 32 MiB
// acknowledged cost more CPU than the memory it saved (bench/HISTORY.md, session 12).
