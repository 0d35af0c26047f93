// What a worker process sealed for an activity a moment ago: the activity's input and result,
// which this same process usually opens right after (a local activity's always), are then not
// deciphered again. Each entry is taken once, and is found by its key id and IV (random per
// seal), then matched on all its sealed bytes. The last seal under each key is also what the
// same plaintext sealed again under it becomes (an upload run's result repeats its commit's).
// The codec still asks the keyring for the key first, so an erased upload's payloads open to
// nothing here as anywhere. Entries are strings (no view of a shared buffer block is kept
// alive), few and short-lived: what is never opened here goes within seconds, before it
// weighs on the old generation.
import { forgetOldest, refresh } from './cache-order';

interface Seal {
  sealed: string;
  plain: string;
  at: number;
}

/** Bytes in a buffer of their own (not a view of Node's shared pool: see withFinal in payload-codec.ts). */
function ownLatin1(text: string): Buffer {
  const bytes = Buffer.allocUnsafeSlow(text.length);
  bytes.write(text, 'latin1');
  return bytes;
}

const latin1 = (bytes: Uint8Array) => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('latin1');

export class RecentSeals {
  private readonly seals = new Map<string, Seal>();
  /** The last seal under each key: what a run seals again next (its result, its commit's) is found here. */
  private readonly lastByKey = new Map<string, Seal>();

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
    return ownLatin1(seal.plain);
  }

  remember(keyId: string, plain: Uint8Array, sealed: Uint8Array): void {
    const seal = { sealed: latin1(sealed), plain: latin1(plain), at: Date.now() };
    refresh(this.seals, this.entryKey(keyId, sealed), seal);
    refresh(this.lastByKey, keyId, seal);
    for (const map of [this.seals, this.lastByKey]) forgetOldest(map, this.max, (s) => this.fresh(s));
  }

  /**
   * The sealed bytes of this plaintext if it is what this process sealed last under this key:
   * sealing it again would only repeat them (the same plaintext under the same key and IV).
   */
  sealedAgain(keyId: string, plain: Uint8Array): Buffer | undefined {
    const last = this.lastByKey.get(keyId);
    if (!last || last.plain.length !== plain.length || !this.fresh(last) || last.plain !== latin1(plain)) return undefined;
    return ownLatin1(last.sealed);
  }

  private fresh(seal: Seal): boolean {
    return Date.now() - seal.at < this.maxAgeMs;
  }

  private entryKey(keyId: string, sealed: Uint8Array): string {
    return keyId + latin1(sealed.subarray(0, this.ivBytes));
  }
}
