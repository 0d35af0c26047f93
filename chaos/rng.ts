// A seeded random source (pure-rand's xoroshiro128+), so a chaos run is reproducible.
// Separate streams (faults, uploads) are forked from the seed so one does not shift the other.
import { createCipheriv } from 'node:crypto';
import { uniformInt } from 'pure-rand/distribution/uniformInt';
import { xoroshiro128plus } from 'pure-rand/generator/xoroshiro128plus';

export class Rng {
  private readonly gen: ReturnType<typeof xoroshiro128plus>;

  constructor(readonly seed: number) {
    this.gen = xoroshiro128plus(seed);
  }

  /** An independent stream for one purpose. */
  fork(stream: number): Rng {
    return new Rng((this.seed * 7919 + stream * 104729) | 0);
  }

  /** Uniform in [min, max], both included. */
  int(min: number, max: number): number {
    return uniformInt(this.gen, min, max);
  }

  /** True with probability p. */
  chance(p: number): boolean {
    return this.int(0, 999_999) < p * 1_000_000;
  }

  /** `n` bytes from an AES-CTR keystream keyed by this stream: fast and reproducible. */
  bytes(n: number): Buffer {
    const key = Buffer.alloc(16);
    for (let i = 0; i < 16; i += 4) key.writeUInt32LE(this.int(0, 0xffffffff) >>> 0, i);
    return createCipheriv('aes-128-ctr', key, Buffer.alloc(16)).update(Buffer.alloc(n));
  }

  shuffle<T>(items: readonly T[]): T[] {
    const a = [...items];
    for (let i = a.length - 1; i > 0; i--) {
      const j = this.int(0, i);
      [a[i], a[j]] = [a[j]!, a[i]!];
    }
    return a;
  }
}
