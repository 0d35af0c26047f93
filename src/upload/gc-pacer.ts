// Streamed bodies arrive as a flow of short-lived 64 KiB socket buffers. V8 frees their
// memory only when it collects their small JS wrappers, and it schedules that by external
// memory growth (~32 MiB), so a 1 GiB upload holds tens of MiB of dead buffers at its
// peaks. A young-generation collection every 8 MiB streamed keeps that floor low. It needs
// `node --expose-gc`, set with `--max-semi-space-size=8` (a smaller young generation; 4
// cost replay p99, 16 kept the peak above 150 MiB) by the Dockerfile, `npm start` and the
// benchmarks; without the flag this is a no-op. 1 GiB upload peak RSS: 199 → ~135 MiB.
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
