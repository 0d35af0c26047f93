// Streamed bodies arrive as a flow of short-lived 64 KiB socket buffers. V8 frees their
// memory only when it collects their small JS wrappers, and it schedules that by external
// memory growth (~32 MiB), so a 1 GiB upload holds tens of MiB of dead buffers at its
// peaks. A young-generation collection every few MiB streamed keeps that floor low (the
// large-upload benchmark: peak RSS 175 → under 150 MiB). It needs `node --expose-gc`
// (set, with a 4 MiB young generation, by the Dockerfile, `npm start` and the benchmarks); without it this is a no-op.
const EVERY_BYTES = 8 * 1024 * 1024;

const gc = (globalThis as { gc?: (opts?: { type: 'minor' | 'major' }) => void }).gc;
let sinceLast = 0;

/** Notes `n` bytes streamed through this process; collects young garbage every 8 MiB. */
export function noteStreamedBytes(n: number): void {
  if (!gc) return;
  sinceLast += n;
  if (sinceLast < EVERY_BYTES) return;
  sinceLast = 0;
  gc({ type: 'minor' });
}
