// The payload codec on every Temporal client and worker Oncely runs: each payload is sealed
// with AES-256-GCM under the data key of the workflow that owns it (payload-scope.ts), the
// key's id in the payload's metadata. Data keys live in PostgreSQL wrapped by SECRETS_KEY;
// destroying one (an upload's erasure) leaves every copy of its payloads — history, archive,
// backup — sealed for good. Payloads written before the codec pass through unchanged.
import { createCipheriv, createDecipheriv, randomBytes, randomUUID } from 'node:crypto';
import type { Payload, PayloadCodec, SerializationContext } from '@temporalio/common';
import proto from '@temporalio/proto';
import {
  ensurePayloadKey,
  findLivePayloadKey,
  findPayloadKeys,
  pageLivePayloadKeys,
  rewrapPayloadKey,
  tenantOfRow,
  type PayloadKeyRow,
} from '../db/queries/payload-keys';
import type { Pool } from '../db/pool';
import type { DraftedRunKey } from '../db/queries/idempotency-keys';
import type { SecretBox } from '../secret-box';
import { payloadOwner, scopes, type TenantRow } from './payload-scope';
import { forgetOldest, refresh } from './cache-order';
import { RecentSeals } from './recent-seals';
import { stepLabels } from '../temporal/step-labels';

export const ENCRYPTED_ENCODING = 'binary/encrypted';
const KEY_ID = 'encryption-key-id';
const IV_BYTES = 12;
const TAG_BYTES = 16;
/**
 * What a payload whose key was destroyed decodes to, everywhere: the codec server (the UI
 * shows it as the value), a client listing runs (an erased run's memo), a worker (code that
 * expects the original value fails on it, as it would on the error).
 */
export const ERASED_MARKER = 'erased';

/** The wire form of a payload (@temporalio/proto is CommonJS: its namespace comes through the default export). */
const WirePayload = proto.temporal.api.common.v1.Payload;
const encoder = new TextEncoder();
const utf8 = (s: string) => encoder.encode(s);
/** Shared by every sealed payload's metadata (nothing writes into a payload's bytes). */
const ENCRYPTED_ENCODING_BYTES = utf8(ENCRYPTED_ENCODING);
const text = (b: Uint8Array | null | undefined) => (b ? Buffer.from(b).toString('utf8') : undefined);
const wrapContext = (id: string) => `payload-key\n${id}`;

/** The steps' fixed labels as the SDK's converter writes them (a JSON string), by length: left in clear (step-labels.ts). */
const LABELS_BY_LENGTH = new Map<number, Buffer[]>();
for (const label of Object.values(stepLabels)) {
  const bytes = Buffer.from(JSON.stringify(label));
  LABELS_BY_LENGTH.set(bytes.length, [...(LABELS_BY_LENGTH.get(bytes.length) ?? []), bytes]);
}
const JSON_PLAIN = Buffer.from('json/plain');

/** One of the steps' fixed labels, which the codec leaves in clear. */
export function isStepLabel(p: Payload): boolean {
  const labels = p.data ? LABELS_BY_LENGTH.get(p.data.length) : undefined;
  const encoding = p.metadata?.encoding;
  return !!labels && !!encoding && JSON_PLAIN.equals(encoding) && labels.some((l) => l.equals(p.data!));
}

/** A data key made here, with its plain bytes, before its row is recorded. */
export type DraftedKey = DraftedRunKey & { plain: Buffer };

/** A sealed payload that cannot be opened: its key id is malformed or its bytes were changed. */
export class UnreadablePayload extends Error {}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/**
 * Data keys by scope (for sealing) and by id (for opening), found or created in PostgreSQL
 * and kept here for `cacheMs`: a destroyed key stops opening payloads in another process
 * within that time (the codec server asks PostgreSQL every time).
 */
export class PayloadKeyring {
  private readonly byScope = new Map<string, { id: string; key: Buffer; at: number }>();
  private readonly byId = new Map<string, { key: Buffer; at: number }>();
  private readonly pending = new Map<string, Promise<{ id: string; key: Buffer }>>();
  private readonly opening = new Map<string, Promise<Buffer | null>>();
  /** Announced keys not unwrapped yet: most a worker hears are other workers' runs'. */
  private readonly heard = new Map<string, { row: PayloadKeyRow; at: number }>();
  private readonly tenants = new Map<string, string>();

  constructor(
    private readonly pool: Pool,
    private readonly box: SecretBox,
    private readonly cacheMs = 60_000,
  ) {}

  /** The live key that seals payloads owned by `context`'s workflow. */
  async sealingKey(context: SerializationContext | undefined): Promise<{ id: string; key: Buffer }> {
    const owner = payloadOwner(context);
    let scope: string;
    let tenantId: string | undefined;
    let uploadId: string | undefined;
    if ('tenantOf' in owner) {
      tenantId = await this.tenantOf(owner.tenantOf.row, owner.tenantOf.id);
      scope = tenantId ? scopes.tenant(tenantId) : scopes.deployment;
    } else {
      scope = owner.scope;
      if ('tenantId' in owner) tenantId = owner.tenantId;
      if ('uploadId' in owner) uploadId = owner.uploadId;
    }
    const cached = this.byScope.get(scope);
    if (cached && this.fresh(cached.at)) return cached;
    let loading = this.pending.get(scope);
    if (!loading) {
      loading = this.loadScope(scope, tenantId, uploadId).finally(() => this.pending.delete(scope));
      this.pending.set(scope, loading);
    }
    return loading;
  }

  /** The keys with these ids; null for a destroyed (or unknown) one. */
  async openingKeys(ids: string[]): Promise<Map<string, Buffer | null>> {
    const found = new Map<string, Buffer | null>();
    const waiting: [string, Promise<Buffer | null>][] = [];
    const missing: string[] = [];
    for (const id of new Set(ids)) {
      const cached = this.byId.get(id) ?? this.unwrapHeard(id);
      if (cached && this.fresh(cached.at)) found.set(id, cached.key);
      else if (this.opening.has(id)) waiting.push([id, this.opening.get(id)!]);
      else missing.push(id);
    }
    // The SDK decodes an activation's parts concurrently: one statement for an id however
    // many of them ask before it answers.
    if (missing.length) {
      const loading = this.loadIds(missing);
      for (const id of missing) {
        const one = loading.then((keys) => keys.get(id) ?? null);
        this.opening.set(id, one);
        void one.finally(() => this.opening.delete(id)).catch(() => {});
        waiting.push([id, one]);
      }
    }
    for (const [id, key] of waiting) found.set(id, await key);
    return found;
  }

  /**
   * A live key made by another process, announced before anyone here asks for it (a worker
   * hears each new run's key before the run's first activation: payload-key-notices.ts). It
   * is unwrapped when first asked for: every worker hears every key, and one of them runs it.
   */
  learn(row: PayloadKeyRow): void {
    // A key this process made or read already (every listener hears its own keys too).
    const known = this.byId.get(row.id);
    if ((known && this.fresh(known.at)) || !row.wrapped) return;
    refresh(this.heard, row.id, { row, at: Date.now() });
    this.forgetStale(this.heard);
  }

  /** An announced key, unwrapped now; none if it was not heard lately or does not unwrap here (then it is read by id). */
  private unwrapHeard(id: string): { key: Buffer; at: number } | undefined {
    const heard = this.heard.get(id);
    if (!heard) return undefined;
    this.heard.delete(id);
    if (!this.fresh(heard.at)) return undefined;
    try {
      return this.adopt(heard.row);
    } catch {
      return undefined;
    }
  }

  private async loadIds(ids: string[]): Promise<Map<string, Buffer | null>> {
    const rows = await findPayloadKeys(this.pool, ids);
    const keys = new Map<string, Buffer | null>();
    for (const id of ids) {
      const row = rows.find((r) => r.id === id);
      keys.set(id, row?.wrapped ? this.adopt(row).key : null);
    }
    return keys;
  }

  /**
   * A live key is its scope's only one: what this process seals for that scope next (a
   * worker's results of the run whose input it just opened) needs no statement of its own.
   */
  private adopt(row: PayloadKeyRow, plain?: Buffer): { id: string; key: Buffer; at: number } {
    const entry = this.remember(row, plain);
    refresh(this.byScope, row.scope, entry);
    this.forgetStale(this.byScope);
    return entry;
  }

  /**
   * A new data key for an upload run, for the caller to record in a statement of its own (the
   * replay lookup before the run starts: src/upload/receive.ts); `recorded` then makes it the
   * key the run's start seals with.
   */
  draftRunKey(workflowId: string): DraftedKey {
    return this.draft(scopes.run(workflowId));
  }

  /**
   * A drafted key its caller recorded as its scope's live key. It seals for half the cache's
   * time only: a worker that heard it announced at the same moment still holds it when the
   * run's first task comes, even if the tenant's deletion destroyed it meanwhile (the run's
   * commit is then refused and its client told 410). A start after that asks PostgreSQL,
   * which refuses a closed tenant's run.
   */
  recorded(draft: DraftedKey): void {
    const entry = this.remember({ id: draft.id, scope: draft.scope, wrapped: draft.wrapped }, draft.plain);
    refresh(this.byScope, draft.scope, { ...entry, at: entry.at - this.cacheMs / 2 });
    this.forgetStale(this.byScope);
  }

  private draft(scope: string): DraftedKey {
    const id = randomUUID();
    const plain = randomBytes(32);
    return { id, scope, plain, wrapped: this.box.seal(plain.toString('base64'), wrapContext(id)) };
  }

  private async loadScope(scope: string, tenantId: string | undefined, uploadId: string | undefined) {
    const draft = this.draft(scope);
    const row = (await ensurePayloadKey(this.pool, { ...draft, tenantId, uploadId })) ?? (await findLivePayloadKey(this.pool, scope));
    if (!row) throw new Error(`the payload key of ${scope} was destroyed while it was being created`);
    // Ours won (the usual case for a new run): no need to unwrap what was just wrapped.
    return this.adopt(row, row.id === draft.id ? draft.plain : undefined);
  }

  private remember(row: PayloadKeyRow, plain?: Buffer): { id: string; key: Buffer; at: number } {
    const key = ownBytes(plain ?? Buffer.from(this.box.open(row.wrapped!, wrapContext(row.id)), 'base64'));
    const entry = { id: row.id, key, at: Date.now() };
    refresh(this.byId, row.id, entry);
    this.forgetStale(this.byId);
    return entry;
  }

  private forgetStale(map: Map<string, { at: number }>): void {
    forgetOldest(map, MAX_CACHED, (v) => this.fresh(v.at));
  }

  /** A run's tenant, read once from its row (a row not found yet is asked again next time). */
  private async tenantOf(row: TenantRow, id: string): Promise<string | undefined> {
    const key = `${row}:${id}`;
    let tenant = this.tenants.get(key);
    if (!tenant) {
      tenant = await tenantOfRow(this.pool, row, id);
      if (tenant) this.tenants.set(key, tenant);
      forgetOldest(this.tenants, MAX_CACHED);
    }
    return tenant;
  }

  private fresh(at: number): boolean {
    return Date.now() - at < this.cacheMs;
  }
}

const MAX_CACHED = 10_000;

/**
 * A key's bytes in memory of their own. Node hands out small buffers as views of a shared
 * 64 KiB block (a base64 decode's among them): a cached 32-byte key kept such a view would
 * keep its whole block alive for as long as the key is cached.
 */
function ownBytes(bytes: Buffer): Buffer {
  if (bytes.byteOffset === 0 && bytes.buffer.byteLength === bytes.length) return bytes;
  const own = Buffer.allocUnsafeSlow(bytes.length);
  bytes.copy(own);
  return own;
}

/** Random bytes drawn 4 KiB at a time (one call into OpenSSL's generator per 341 IVs), each IV used once. */
let randomBlock = Buffer.alloc(0);
let randomAt = 0;
function freshIv(): Buffer {
  if (randomAt + IV_BYTES > randomBlock.length) {
    randomBlock = randomBytes(4096);
    randomAt = 0;
  }
  randomAt += IV_BYTES;
  return randomBlock.subarray(randomAt - IV_BYTES, randomAt);
}

/**
 * A cipher's output: what `update` gave, in a buffer of its own and of its exact size, unless
 * `final` added bytes (GCM adds none). Not a copy into Node's shared pool: an opened payload's
 * bytes are views of this buffer, and a worker posts every activation's payloads to its
 * workflow thread, which copies each whole buffer a view belongs to (a pool block is 64 KiB).
 */
function withFinal(head: Buffer, tail: Buffer): Buffer {
  return tail.length ? Buffer.concat([head, tail]) : head;
}

function keyIdOf(p: Payload): string {
  const id = text(p.metadata?.[KEY_ID]) ?? '';
  if (!UUID.test(id)) throw new UnreadablePayload('a sealed payload names no key');
  return id;
}

export function isSealed(p: Payload): boolean {
  return text(p.metadata?.encoding) === ENCRYPTED_ENCODING;
}

export class SealingCodec implements PayloadCodec {
  private readonly recent: RecentSeals | undefined;

  /**
   * `rememberMs`: how long what this process sealed for an activity is remembered
   * (recent-seals.ts), for a process that runs activities; 0 for one that does not.
   */
  constructor(
    private readonly keyring: PayloadKeyring,
    opts: { rememberMs?: number } = {},
  ) {
    this.recent = opts.rememberMs ? new RecentSeals(opts.rememberMs, IV_BYTES) : undefined;
  }

  async encode(payloads: Payload[], context?: SerializationContext): Promise<Payload[]> {
    const labels = payloads.map(isStepLabel);
    if (labels.every(Boolean)) return payloads;
    const { id, key } = await this.keyring.sealingKey(context);
    const idBytes = utf8(id);
    const recent = context?.type === 'activity' ? this.recent : undefined;
    return payloads.map((p, i) => {
      if (labels[i]) return p;
      const plain = WirePayload.encode(p).finish();
      // A run's result repeats its commit's, sealed a moment ago under the same key: the same bytes again.
      const again = this.recent?.sealedAgain(id, plain);
      if (again) return { metadata: { encoding: ENCRYPTED_ENCODING_BYTES, [KEY_ID]: idBytes }, data: again };
      const iv = freshIv();
      const cipher = createCipheriv('aes-256-gcm', key, iv);
      cipher.setAAD(idBytes);
      const sealed = withFinal(cipher.update(plain), cipher.final());
      const data = Buffer.concat([iv, cipher.getAuthTag(), sealed]);
      recent?.remember(id, plain, data);
      return { metadata: { encoding: ENCRYPTED_ENCODING_BYTES, [KEY_ID]: idBytes }, data };
    });
  }

  async decode(payloads: Payload[]): Promise<Payload[]> {
    const keyIds = payloads.map((p) => (isSealed(p) ? keyIdOf(p) : undefined));
    const ids = keyIds.filter((id) => id !== undefined);
    if (!ids.length) return payloads;
    const keys = await this.keyring.openingKeys(ids);
    return payloads.map((p, i) => {
      const id = keyIds[i];
      if (id === undefined) return p;
      const key = keys.get(id);
      if (!key) return { metadata: { encoding: utf8('json/plain') }, data: utf8(JSON.stringify(ERASED_MARKER)) };
      const data = p.data ? Buffer.from(p.data.buffer, p.data.byteOffset, p.data.byteLength) : Buffer.alloc(0);
      const known = this.recent?.take(id, data);
      if (known) return WirePayload.decode(known);
      if (data.length < IV_BYTES + TAG_BYTES) throw new UnreadablePayload(`a payload sealed under ${id} is truncated`);
      const decipher = createDecipheriv('aes-256-gcm', key, data.subarray(0, IV_BYTES));
      decipher.setAAD(utf8(id));
      decipher.setAuthTag(data.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
      try {
        const plain = withFinal(decipher.update(data.subarray(IV_BYTES + TAG_BYTES)), decipher.final());
        return WirePayload.decode(plain);
      } catch {
        throw new UnreadablePayload(`a payload sealed under ${id} does not open: its bytes were changed`);
      }
    });
  }
}

/**
 * Re-wraps every live data key under the current SECRETS_KEY (after a rotation, the old key
 * in SECRETS_KEY_PREVIOUS): the keys themselves are unchanged, so no history is re-encrypted.
 * Answers how many were re-wrapped; a key destroyed meanwhile is left destroyed.
 */
export async function rewrapPayloadKeys(pool: Pool, box: SecretBox): Promise<number> {
  let after: string | null = null;
  let count = 0;
  for (;;) {
    const page = await pageLivePayloadKeys(pool, after, 500);
    if (!page.length) return count;
    for (const row of page) {
      const key = box.open(row.wrapped!, wrapContext(row.id));
      if (await rewrapPayloadKey(pool, row.id, row.wrapped!, box.seal(key, wrapContext(row.id)))) count++;
    }
    after = page.at(-1)!.id;
  }
}
