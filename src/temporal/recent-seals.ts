// What a worker process sealed a moment ago, by exact bytes both ways: the same plaintext
// sealed again under the same key (a run's result that repeats its commit's answer) reuses
// the sealed bytes, and a payload the process opens soon after sealing it (a local activity's
// input and result; in a process that is API and worker at once, a run's input) is not
// deciphered again. The codec still asks the keyring for the key first, so an erased upload's
// payloads open to nothing here as anywhere. Entries are strings: no view of a shared buffer
// block is kept alive by the cache.
import { LRUCache } from 'lru-cache';

const latin1 = (bytes: Uint8Array) => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('latin1');

export class RecentSeals {
  private readonly bySealed: LRUCache<string, string>;
  private readonly byPlain: LRUCache<string, string>;

  constructor(maxAgeMs: number, max = 2_048) {
    this.bySealed = new LRUCache({ max, ttl: maxAgeMs });
    this.byPlain = new LRUCache({ max, ttl: maxAgeMs });
  }

  /** The sealed bytes of this plaintext under this key, if this process sealed it lately. */
  sealedBefore(keyId: string, plain: Uint8Array): Buffer | undefined {
    const sealed = this.byPlain.get(`${keyId}\n${latin1(plain)}`);
    return sealed === undefined ? undefined : Buffer.from(sealed, 'latin1');
  }

  /** The plaintext of these sealed bytes under this key, if this process sealed them lately. */
  openedBefore(keyId: string, sealed: Uint8Array): Buffer | undefined {
    const plain = this.bySealed.get(`${keyId}\n${latin1(sealed)}`);
    return plain === undefined ? undefined : Buffer.from(plain, 'latin1');
  }

  remember(keyId: string, plain: Uint8Array, sealed: Uint8Array): void {
    const plainText = latin1(plain);
    const sealedText = latin1(sealed);
    this.byPlain.set(`${keyId}\n${plainText}`, sealedText);
    this.bySealed.set(`${keyId}\n${sealedText}`, plainText);
  }
}
