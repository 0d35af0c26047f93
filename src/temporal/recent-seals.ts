// What a worker process sealed for an activity a moment ago: the activity's input and result,
// which this same process usually opens right after (a local activity's always), are then not
// deciphered again. Each entry is taken once, and is found by its key id and IV (random per
// seal), then matched on all its sealed bytes. The codec still asks the keyring for the key
// first, so an erased upload's payloads open to nothing here as anywhere. Entries are strings
// (no view of a shared buffer block is kept alive), few and short-lived: what is never opened
// here (an activity's summary) goes within seconds, before it weighs on the old generation.
import { forgetOldest, refresh } from './cache-order';

const latin1 = (bytes: Uint8Array) => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('latin1');

export class RecentSeals {
  private readonly seals = new Map<string, { sealed: string; plain: string; at: number }>();

  constructor(
    private readonly maxAgeMs: number,
    private readonly ivBytes: number,
    private readonly max = 512,
  ) {}

  /** The plaintext of these sealed bytes (IV first) under this key, if this process sealed them lately; forgotten once taken. */
  take(keyId: string, sealed: Uint8Array): Buffer | undefined {
    const key = this.entryKey(keyId, sealed);
    const seal = this.seals.get(key);
    if (!seal || !this.fresh(seal) || seal.sealed !== latin1(sealed)) return undefined;
    this.seals.delete(key);
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
