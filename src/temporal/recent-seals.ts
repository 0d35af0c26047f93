// What a worker process sealed a moment ago: a payload it opens soon after sealing it (a local
// activity's input and result; in a process that is API and worker at once, a run's input)
// is not deciphered again. Found by its key id and IV (random per seal), then matched on all
// its sealed bytes. The codec still asks the keyring for the key first, so an erased upload's
// payloads open to nothing here as anywhere. Entries are strings: no view of a shared buffer
// block is kept alive by the cache.
import { forgetOldest, refresh } from './cache-order';

const latin1 = (bytes: Uint8Array) => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('latin1');

export class RecentSeals {
  private readonly seals = new Map<string, { sealed: string; plain: string; at: number }>();

  constructor(
    private readonly maxAgeMs: number,
    private readonly ivBytes: number,
    private readonly max = 2_048,
  ) {}

  /** The plaintext of these sealed bytes (IV first) under this key, if this process sealed them lately. */
  openedBefore(keyId: string, sealed: Uint8Array): Buffer | undefined {
    const seal = this.seals.get(this.entryKey(keyId, sealed));
    if (!seal || !this.fresh(seal) || seal.sealed !== latin1(sealed)) return undefined;
    return Buffer.from(seal.plain, 'latin1');
  }

  remember(keyId: string, plain: Uint8Array, sealed: Uint8Array): void {
    refresh(this.seals, this.entryKey(keyId, sealed), { sealed: latin1(sealed), plain: latin1(plain), at: Date.now() });
    forgetOldest(this.seals, this.max, (seal) => this.fresh(seal));
  }

  private fresh(seal: { at: number }): boolean {
    return Date.now() - seal.at < this.maxAgeMs;
  }

  private entryKey(keyId: string, sealed: Uint8Array): string {
    return keyId + latin1(sealed.subarray(0, this.ivBytes));
  }
}
