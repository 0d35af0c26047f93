// The one place a StagedCopy is made, whatever the arrival mode: an attempt's complete,
// verified bytes in the store, with the media type its first bytes show. Also the one
// window of first bytes every mode keeps for that (SNIFF_BYTES), collected while bytes
// stream (HeadBytes) or read back from the store (readStoredHead).
import { sniff } from './sniff';
import type { StagedCopy } from './types';
import type { ObjectStore } from '../storage/store';

/** How many first bytes a mode keeps for sniffing (enough for every signature in sniff.ts). */
export const SNIFF_BYTES = 64;

export interface CopyFacts {
  attemptId: string;
  fingerprint: string;
  storageKey: string;
  bytes: number;
  sha256: string;
  /** The object's first bytes (up to SNIFF_BYTES; fewer for a short file). */
  head: Uint8Array;
}

export function stagedCopy(f: CopyFacts): StagedCopy {
  return {
    attemptId: f.attemptId,
    fingerprint: f.fingerprint,
    storageKey: f.storageKey,
    bytes: f.bytes,
    sha256: f.sha256,
    sniffedType: sniff(f.head),
  };
}

/** Keeps the first SNIFF_BYTES of a stream as chunks pass. */
export class HeadBytes {
  private bytes = Buffer.alloc(0);

  /** Notes `chunk`, which starts at `offset` of the object (default: right after the last). */
  add(chunk: Uint8Array, offset = this.bytes.length): void {
    if (offset >= SNIFF_BYTES || offset !== this.bytes.length) return;
    this.bytes = Buffer.concat([this.bytes, chunk.subarray(0, SNIFF_BYTES - offset)]);
  }

  get value(): Buffer {
    return this.bytes;
  }

  get full(): boolean {
    return this.bytes.length >= SNIFF_BYTES;
  }
}

/** The first bytes of a stored object (empty when it is gone). */
export async function readStoredHead(store: ObjectStore, key: string): Promise<Buffer> {
  const stream = await store.get(key);
  if (!stream) return Buffer.alloc(0);
  const head = new HeadBytes();
  try {
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      head.add(chunk);
      if (head.full) break;
    }
  } finally {
    stream.destroy();
  }
  return head.value;
}
