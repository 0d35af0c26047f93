// Checks the invariants of DESIGN.md §4 over the database and the object store:
//  1. one upload row, key row and committed object per (tenant, key);
//  2. every upload's stored bytes hash to its recorded SHA-256 and size;
//  4. key rows and upload rows agree (nothing changed under a reused key);
//  5. every row, object key and workflow id stays inside its tenant;
// and, for the downstream steps, one rendition set per upload (every rendition row's
// object present and whole, every rendition a succeeded step of the served version made
// served) and one distinct webhook event id per upload and event type;
// for deletions, an erased upload has no object of its own, no rendition and no personal
// metadata, while every live upload (deleted ones' shared bytes included) has all its bytes;
// for the record, every version from 1 to the row's once it changed, the label index exactly
// the record's labels, and nothing of either once erased; usage that adds up to the upload rows
// (stored bytes, uploads and ingress counted once each), and so to the stored objects (each
// checked against its row, an HLS rung's segments against its companion bytes); no reservation
// left by a commit, and every open session holding one of its declared length; a held upload
// never erased nor being erased, and, where the store has Object Lock, held there too.
import { parseAddress, storeRoots } from './storage/address';
import { companionPrefix, renditionPrefix } from './storage/layout';
import { allStorageTargetIds } from './db/queries/storage-targets';
import { createHash } from 'node:crypto';
import type { Pool } from './db/pool';
import {
  allDeliveries,
  allRenditions,
  allUploads,
  type AuditedUpload,
  countRows,
  duplicateUploadsPerKey,
  miscountedObjects,
  miscountedUsage,
  missingServedRenditions,
  mismatchedKeyRows,
  suspiciousDeliveries,
  unservedRenditionRows,
} from './db/queries/audit';
import { isDerivedEventId, type EventType } from './downstream/events';
import { labelKeys } from './db/queries/upload-record';
import type { ObjectStore } from './storage/store';
import { keyStoragePrefix, uploadWorkflowId } from './temporal/ids';

export interface AuditReport {
  tenants: number;
  uploads: number;
  keyRows: number;
  objectsVerified: number;
  /** Objects under a key's folder that no upload references (staging leftovers). */
  unreferencedObjects: number;
  renditions: number;
  deliveries: number;
  deliveredEvents: number;
  violations: string[];
}

async function sha256OfObject(store: ObjectStore, key: string): Promise<{ sha256: string; bytes: number } | undefined> {
  const stream = await store.get(key);
  if (!stream) return undefined;
  const hash = createHash('sha256');
  let bytes = 0;
  for await (const chunk of stream) {
    hash.update(chunk as Buffer);
    bytes += (chunk as Buffer).length;
  }
  return { sha256: hash.digest('hex'), bytes };
}

export interface AuditOptions {
  /** Key TTL + tombstone TTL: uploads older than this may have neither key row nor tombstone. */
  keyRetentionSeconds?: number;
}

/** A held upload's objects the store does not hold, where it could (S3 Object Lock). */
async function storeHoldFaults(store: ObjectStore, u: AuditedUpload): Promise<string[]> {
  if (!store.legalHoldOf) return [];
  const keys = [u.storage_key];
  for await (const o of store.list(renditionPrefix(u.tenant_id, u.id, u.storage_key))) keys.push(o.key);
  const faults: string[] = [];
  for (const key of keys) if ((await store.legalHoldOf(key)) === false) faults.push(`object ${key} is not held by the store`);
  return faults;
}

/** The record's own invariants: its version is its last version's, and its index holds exactly its labels (none once erased). */
function recordFaults(u: AuditedUpload): string[] {
  if (u.erased) return [];
  const faults: string[] = [];
  if (u.versions > 0 && (u.last_version !== u.record_version || u.versions !== u.record_version))
    faults.push(`is at version ${u.record_version} with ${u.versions} versions recorded, the last ${u.last_version}`);
  if (u.versions === 0 && u.record_version !== 1) faults.push(`is at version ${u.record_version} with no version recorded`);
  const want = labelKeys(u).sort();
  const have = [...u.labels].sort();
  if (want.join('\n') !== have.join('\n')) faults.push(`is indexed under [${have.join(', ')}], its record says [${want.join(', ')}]`);
  return faults;
}

export async function audit(pool: Pool, store: ObjectStore, opts: AuditOptions = {}): Promise<AuditReport> {
  const violations: string[] = [];
  const counts = await countRows(pool);
  for (const d of await duplicateUploadsPerKey(pool))
    violations.push(`duplicate: ${d.n} upload rows for tenant ${d.tenant_id} key ${d.idempotency_key}`);
  for (const m of await mismatchedKeyRows(pool, opts.keyRetentionSeconds ?? null))
    violations.push(`mismatch: tenant ${m.tenant_id} key ${m.key}: ${m.problem}`);

  let objectsVerified = 0;
  const referenced = new Set<string>();
  for (const m of await miscountedObjects(pool)) violations.push(`dedupe: object ${m.storage_key}: ${m.problem}`);
  for (const m of await miscountedUsage(pool)) violations.push(`usage: tenant ${m.tenant_id}: ${m.problem}`);
  const hashed = new Map<string, Awaited<ReturnType<typeof sha256OfObject>>>();
  const erased: { id: string; tenant_id: string; storage_key: string }[] = [];
  for await (const u of allUploads(pool)) {
    for (const fault of recordFaults(u)) violations.push(`record: upload ${u.id} ${fault}`);
    if (u.held && u.deleted && !u.pending) violations.push(`hold: held upload ${u.id} was erased or is being erased`);
    if (u.held) for (const fault of await storeHoldFaults(store, u)) violations.push(`hold: upload ${u.id} ${fault}`);
    if (u.erased) {
      if (u.personal) violations.push(`erasure: deleted upload ${u.id} keeps its file name, media metadata, subject, metadata or tags`);
      if (u.versions > 0 || u.labels.length > 0)
        violations.push(`erasure: deleted upload ${u.id} keeps ${u.versions} record versions and ${u.labels.length} label entries`);
      if (u.renditions > 0) violations.push(`erasure: deleted upload ${u.id} keeps ${u.renditions} rendition rows`);
      if (!u.released) violations.push(`erasure: deleted upload ${u.id} still claims its object`);
      erased.push(u);
      continue;
    }
    // A deletion under way: its bytes are being erased (within a restore window they stay whole: checked below).
    if (u.deleted && !u.pending) continue;
    if (u.pending && u.released) violations.push(`restore window: deleted upload ${u.id} gave up its object before its window ended`);
    // Rejected by its pipeline (an infected file): nothing of it may stay.
    if (u.rejected) {
      if (!u.released) violations.push(`rejection: rejected upload ${u.id} still claims its object`);
      if (u.renditions > 0) violations.push(`rejection: rejected upload ${u.id} keeps ${u.renditions} rendition rows`);
      erased.push(u);
      continue;
    }
    // A shared object (dedupe) lies under the key of the upload that first stored it: same tenant.
    const prefix = u.shared ? `tenants/${u.tenant_id}/keys/` : keyStoragePrefix(u.tenant_id, u.idempotency_key);
    if (!parseAddress(u.storage_key).key.startsWith(prefix))
      violations.push(`tenancy: upload ${u.id} object ${u.storage_key} is outside ${prefix}`);
    const workflowId = uploadWorkflowId(u.tenant_id, u.idempotency_key);
    if (u.workflow_id !== workflowId) violations.push(`tenancy: upload ${u.id} ran as ${u.workflow_id}, expected ${workflowId}`);
    const got = hashed.has(u.storage_key) ? hashed.get(u.storage_key) : await sha256OfObject(store, u.storage_key);
    hashed.set(u.storage_key, got);
    if (!got) {
      violations.push(`loss: upload ${u.id} object ${u.storage_key} is missing`);
      continue;
    }
    if (got.sha256 !== u.sha256 || got.bytes !== Number(u.bytes)) {
      violations.push(`loss: upload ${u.id} object hashes to ${got.sha256} (${got.bytes} bytes), recorded ${u.sha256} (${u.bytes} bytes)`);
    }
    objectsVerified++;
    referenced.add(u.storage_key);
  }
  // An erased (or rejected) upload's bytes are gone unless a live upload still shares them.
  for (const u of erased) {
    if (!referenced.has(u.storage_key) && (await store.head(u.storage_key)))
      violations.push(`erasure: deleted or rejected upload ${u.id} object ${u.storage_key} is still stored`);
    for await (const o of store.list(renditionPrefix(u.tenant_id, u.id, u.storage_key)))
      violations.push(`erasure: deleted or rejected upload ${u.id} rendition object ${o.key} is still stored`);
  }
  const renditions = await allRenditions(pool);
  for (const r of renditions) {
    const prefix = renditionPrefix(r.tenant_id, r.upload_id, r.upload_storage_key);
    if (!r.storage_key.startsWith(prefix))
      violations.push(`tenancy: rendition ${r.upload_id}/${r.name} object ${r.storage_key} is outside ${prefix}`);
    const head = await store.head(r.storage_key);
    if (!head) violations.push(`loss: rendition ${r.upload_id}/${r.name} object ${r.storage_key} is missing`);
    else if (head.bytes !== Number(r.bytes))
      violations.push(`loss: rendition ${r.upload_id}/${r.name} has ${head.bytes} bytes, recorded ${r.bytes}`);
    referenced.add(r.storage_key);
    // Its companions, as counted (renditions from before migration 041 recorded none).
    if (Number(r.companion_bytes) === 0) continue;
    let companions = 0;
    for await (const o of store.list(companionPrefix(r.storage_key, r.name))) companions += o.bytes;
    if (companions !== Number(r.companion_bytes))
      violations.push(`usage: rendition ${r.upload_id}/${r.name} has ${companions} bytes of companions, counted ${r.companion_bytes}`);
  }
  for (const r of await unservedRenditionRows(pool))
    violations.push(
      `renditions: upload ${r.upload_id} keeps ${r.name} of ${r.pipeline} v${r.pipeline_version}, a version it does not serve`,
    );
  for (const m of await missingServedRenditions(pool))
    violations.push(
      `renditions: upload ${m.upload_id} serves ${m.pipeline} v${m.pipeline_version}, whose step ${m.step_index} made ${m.name}, which is not served`,
    );
  for (const d of await suspiciousDeliveries(pool)) violations.push(`webhook: ${d.event_id} (upload ${d.upload_id}): ${d.problem}`);
  const deliveries = await allDeliveries(pool);
  for (const d of deliveries) {
    if (!d.subject_id) violations.push(`webhook: event ${d.event_id} names neither an upload nor a storage migration of its tenant`);
    else if (!isDerivedEventId(d.event_id, d.subject_id, d.event_type as EventType))
      violations.push(`webhook: event id ${d.event_id} is not the derived id for ${d.subject_id} ${d.event_type}`);
  }
  let unreferencedObjects = 0;
  for (const root of storeRoots(await allStorageTargetIds(pool)))
    for await (const o of store.list(`${root}tenants/`)) if (!referenced.has(o.key)) unreferencedObjects++;
  return {
    tenants: counts.tenants,
    uploads: counts.uploads,
    keyRows: counts.keys,
    objectsVerified,
    unreferencedObjects,
    renditions: renditions.length,
    deliveries: deliveries.length,
    deliveredEvents: deliveries.filter((d) => d.delivered).length,
    violations,
  };
}
