// The object store every role uses: it reads each key's address (address.ts) and sends the
// call to the store of the target it names — the instance's store for a bare key, a tenant's
// registered target (src/placement/directory.ts) for `targets/{id}/…`. Listing answers
// addresses too, so a key read from a listing goes back to the same target.
import type { Readable } from 'node:stream';
import { addressOn, parseAddress } from './address';
import type { ObjectPresigner, ObjectStore, PutOptions, SignedRequest, StoredObject } from './store';
import { S3Store } from './s3-store';

/** The largest object one CopyObject copies. */
const S3_COPY_LIMIT = 5 * 1024 ** 3;

/** A registered target's store and the prefix its keys live under in its bucket. */
export interface TargetStore {
  store: ObjectStore;
  prefix: string;
}

export type TargetResolver = (targetId: string) => Promise<TargetStore>;

export class RoutedStore implements ObjectStore {
  readonly kind: ObjectStore['kind'];
  readonly presigner?: ObjectPresigner;
  readonly putPartStreamed?: ObjectStore['putPartStreamed'];
  private readonly routedPresigner = new RoutedPresigner(this);

  constructor(
    readonly defaultStore: ObjectStore,
    private readonly targets: TargetResolver,
  ) {
    this.kind = defaultStore.kind;
    // Direct uploads and downloads are signed by the store when the default can sign (S3);
    // a registered target is always S3, so it can too.
    if (defaultStore.presigner) this.presigner = this.routedPresigner;
    // Parts stream while they arrive where the default can (S3); every registered target can too.
    if (defaultStore.putPartStreamed) this.putPartStreamed = (...a) => this.streamPart(...a);
  }

  /** The store an address lives in and the key there. */
  async locate(address: string): Promise<{ store: ObjectStore; key: string; targetId: string | null }> {
    const { targetId, key } = parseAddress(address);
    if (!targetId) return { store: this.defaultStore, key, targetId };
    const target = await this.targets(targetId);
    return { store: target.store, key: `${target.prefix}${key}`, targetId };
  }

  async put(address: string, body: Readable, opts: PutOptions): Promise<void> {
    const at = await this.locate(address);
    return at.store.put(at.key, body, opts);
  }

  async get(address: string, range?: { start: number; end: number }): Promise<Readable | undefined> {
    const at = await this.locate(address);
    return at.store.get(at.key, range);
  }

  async head(address: string): Promise<StoredObject | undefined> {
    const at = await this.locate(address);
    const found = await at.store.head(at.key);
    return found && { ...found, key: address };
  }

  async delete(address: string): Promise<void> {
    const at = await this.locate(address);
    return at.store.delete(at.key);
  }

  async *list(prefix: string): AsyncIterable<StoredObject> {
    const { targetId } = parseAddress(prefix);
    if (!targetId) {
      yield* this.defaultStore.list(prefix);
      return;
    }
    const target = await this.targets(targetId);
    const at = await this.locate(prefix);
    for await (const o of at.store.list(at.key)) yield { ...o, key: addressOn(targetId, o.key.slice(target.prefix.length)) };
  }

  async beginParts(address: string, contentType: string): Promise<string> {
    const at = await this.locate(address);
    return at.store.beginParts(at.key, contentType);
  }

  async putPart(address: string, uploadId: string, partNumber: number, bytes: Buffer): Promise<string> {
    const at = await this.locate(address);
    return at.store.putPart(at.key, uploadId, partNumber, bytes);
  }

  private async streamPart(address: string, uploadId: string, partNumber: number, body: Readable, bytes: number): Promise<string> {
    const at = await this.locate(address);
    // A registered target is S3, which streams parts as the instance's S3 store does.
    return at.store.putPartStreamed!(at.key, uploadId, partNumber, body, bytes);
  }

  async completeParts(address: string, uploadId: string, parts: { partNumber: number; etag: string }[]): Promise<void> {
    const at = await this.locate(address);
    return at.store.completeParts(at.key, uploadId, parts);
  }

  async abortParts(address: string, uploadId: string): Promise<void> {
    const at = await this.locate(address);
    return at.store.abortParts(at.key, uploadId);
  }

  /** Without `address`: the default store's (each target's own are its operator's bucket lifecycle). */
  async abortStaleMultipartUploads(olderThan: Date, address?: string): Promise<number> {
    if (address === undefined) return this.defaultStore.abortStaleMultipartUploads(olderThan);
    const at = await this.locate(address);
    return at.store.abortStaleMultipartUploads(olderThan, at.key);
  }

  async copyWithin(from: string, to: string, bytes: number): Promise<boolean> {
    if (bytes > S3_COPY_LIMIT) return false;
    const [a, b] = await Promise.all([this.locate(from), this.locate(to)]);
    if (!(a.store instanceof S3Store) || !(b.store instanceof S3Store) || !b.store.sameServiceAs(a.store)) return false;
    await b.store.copyFrom(a.store, a.key, b.key);
    return true;
  }

  async setLegalHold(address: string, on: boolean): Promise<boolean> {
    const at = await this.locate(address);
    return (await at.store.setLegalHold?.(at.key, on)) ?? false;
  }

  async presignerFor(address: string): Promise<ObjectPresigner | undefined> {
    return (await this.locate(address)).store.presigner ? this.routedPresigner : undefined;
  }

  async holdsObjects(address: string): Promise<boolean> {
    const at = await this.locate(address);
    return (await at.store.holdsObjects?.(at.key)) ?? false;
  }

  async legalHoldOf(address: string): Promise<boolean | undefined> {
    const at = await this.locate(address);
    return at.store.legalHoldOf?.(at.key);
  }

  probe(): Promise<void> {
    return this.defaultStore.probe();
  }
}

/** Signs against the store an address lives in. */
class RoutedPresigner implements ObjectPresigner {
  constructor(private readonly routed: RoutedStore) {}

  private async signer(address: string): Promise<{ presigner: ObjectPresigner; key: string }> {
    const at = await this.routed.locate(address);
    if (!at.store.presigner) throw new Error(`the store of ${address} signs no requests`);
    return { presigner: at.store.presigner, key: at.key };
  }

  async presignGet(address: string, o: Parameters<ObjectPresigner['presignGet']>[1]): Promise<SignedRequest> {
    const s = await this.signer(address);
    return s.presigner.presignGet(s.key, o);
  }

  async presignPut(address: string, o: Parameters<ObjectPresigner['presignPut']>[1]): Promise<SignedRequest> {
    const s = await this.signer(address);
    return s.presigner.presignPut(s.key, o);
  }

  async beginCheckedParts(address: string, contentType: string): Promise<string> {
    const s = await this.signer(address);
    return s.presigner.beginCheckedParts(s.key, contentType);
  }

  async presignPart(
    address: string,
    uploadId: string,
    partNumber: number,
    o: Parameters<ObjectPresigner['presignPart']>[3],
  ): Promise<SignedRequest> {
    const s = await this.signer(address);
    return s.presigner.presignPart(s.key, uploadId, partNumber, o);
  }

  async listParts(address: string, uploadId: string): ReturnType<ObjectPresigner['listParts']> {
    const s = await this.signer(address);
    return s.presigner.listParts(s.key, uploadId);
  }

  async partsUnlessCompleted(address: string, uploadId: string): ReturnType<ObjectPresigner['partsUnlessCompleted']> {
    const s = await this.signer(address);
    return s.presigner.partsUnlessCompleted(s.key, uploadId);
  }

  async completeCheckedParts(
    address: string,
    uploadId: string,
    parts: Parameters<ObjectPresigner['completeCheckedParts']>[2],
  ): Promise<void> {
    const s = await this.signer(address);
    return s.presigner.completeCheckedParts(s.key, uploadId, parts);
  }

  async checksum(address: string): ReturnType<ObjectPresigner['checksum']> {
    const s = await this.signer(address);
    return s.presigner.checksum(s.key);
  }
}
