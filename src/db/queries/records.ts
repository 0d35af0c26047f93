// The records transaction: the upload row and the key row with its exact response, in one
// transaction. Every insert is conflict-tolerant, so a retried activity changes nothing
// and returns the answer the first attempt stored.
import type { Pool, Queryable } from '../pool';
import { withTransaction } from '../pool';
import { findKeyHolder, insertKeyIfAbsent, UPLOAD_ROUTE, type KeyHolder } from './idempotency-keys';
import { insertUploadIfAbsent, type NewUpload } from './uploads';
import { countTokenUpload } from './upload-tokens';
import type { StoredResponse } from '../../upload/types';
import { keyStoragePrefix } from '../../temporal/ids';
import { parseAddress } from '../../storage/address';

/** stored_objects' unique index: content is shared within one storage target (migration 038). */
const SAME_TARGET = "coalesce(storage_target, '00000000-0000-0000-0000-000000000000'::uuid)";
import type { PipelineVersion } from '../../pipelines/steps';
import { latestPipelineVersion } from './pipelines';
import { endImport } from './imports';
import { writeLabels } from './upload-record';
import { chargeCommit } from './byte-quotas';

export interface RecordsInput {
  tenantId: string;
  key: string;
  fingerprint: string;
  workflowId: string;
  startedAt: Date;
  ttlSeconds: number;
  /** Present for an accepted upload; absent for a recorded rejection. */
  upload?: NewUpload;
  /**
   * The pipeline the upload asked for. Its latest version is recorded on the row; when none
   * of its steps applies to the file and no webhook would fire, the upload is marked
   * processed in the same transaction: there is no downstream work to start.
   */
  pipeline?: PipelineChoice;
  /** The import (POST /v1/imports) this upload was read by: its row ends with the records. */
  importId?: string;
  /** The committing step's W3C traceparent (tracing on), kept on the key row and the upload. */
  traceparent?: string | null;
  /** Builds the response body from the committed row's creation time and object (shared, under dedupe). */
  response: (createdAt: Date, storageKey: string | null) => { status: number; body: string };
}

/**
 * The pipeline an upload runs, and what a version makes of a file, as the caller knows
 * them (src/pipelines/steps.ts): the queries record the outcome, they do not decide it.
 */
export interface PipelineChoice {
  /** The name the upload asked for; absent: `defaultName`. */
  requested?: string;
  defaultName: string;
  /** What `defaultName` runs until the tenant declares its own. */
  builtin: PipelineVersion;
  /** Held until its gates (a virus scan) pass. */
  startsGated(p: PipelineVersion, contentType: string): boolean;
  /** Why nothing runs for this file, or null when some step does. */
  idleReason(p: PipelineVersion, contentType: string): string | null;
  /** Whether the version announces the upload (a webhook step). */
  announces(p: PipelineVersion): boolean;
}

/**
 * The key row is held by another request: another route's (an API key, a webhook endpoint),
 * or an upload with another fingerprint. Nothing was written; the upload must not be
 * acknowledged with that row's answer.
 */
export class KeyHeldElsewhere extends Error {
  constructor(readonly holder: Pick<KeyHolder, 'route'>) {
    super(`the Idempotency-Key is held by another request (${holder.route})`);
    this.name = 'KeyHeldElsewhere';
  }
}

/** The upload token's uploads are used up: nothing was written. */
export class TokenExhausted extends Error {
  constructor(readonly tokenId: string) {
    super(`upload token ${tokenId} has no uploads left`);
    this.name = 'TokenExhausted';
  }
}

export async function commitUploadRecords(pool: Pool, input: RecordsInput): Promise<StoredResponse> {
  return withTransaction(pool, async (tx) => {
    const existing = await findKeyHolder(tx, input.tenantId, input.key);
    if (existing) return answerOfOwnRow(tx, existing, input);
    let createdAt = new Date();
    let storageKey: string | null = null;
    /** Known when this transaction wrote the upload row: whether it left work downstream (not settled as processed). */
    let downstreamNeeded: boolean | undefined;
    /** Set when this transaction wrote the upload row: what its commit charges. */
    let charge: { bytes: number; imported: boolean } | undefined;
    if (input.upload) {
      if (input.upload.token_id && !(await countTokenUpload(tx, input.upload.token_id))) throw new TokenExhausted(input.upload.token_id);
      // Under the tenant's dedupe, identical bytes already stored become this upload's object.
      storageKey = await shareObject(tx, input.upload);
      const choice = input.pipeline;
      const pipeline = choice && (await resolvePipeline(tx, input.tenantId, choice));
      const inserted = await insertUploadIfAbsent(tx, {
        ...input.upload,
        storage_key: storageKey,
        traceparent: input.traceparent ?? null,
        ...(pipeline ? { pipeline: pipeline.name, pipeline_version: pipeline.version } : {}),
        ...(pipeline && choice.startsGated(pipeline, input.upload.content_type) ? { availability: 'gated' as const } : {}),
      });
      const stored =
        inserted ??
        (
          await tx.query<{ id: string; created_at: Date }>(
            'SELECT id, created_at FROM uploads WHERE tenant_id = $1 AND idempotency_key = $2',
            [input.tenantId, input.key],
          )
        ).rows[0];
      if (!stored || stored.id !== input.upload.id) {
        // Another upload already owns this key: refuse loudly rather than pair the key
        // row with the wrong upload (the unique constraint did its job).
        throw new Error(`key ${input.key} already belongs to upload ${stored?.id}`);
      }
      createdAt = stored.created_at;
      if (inserted) {
        await writeLabels(tx, inserted.id, input.upload);
        charge = { bytes: input.upload.bytes, imported: input.upload.arrival === 'import' };
      }
      const idle = pipeline && choice.idleReason(pipeline, input.upload.content_type);
      const settled = !!pipeline && !!idle && (await settleIfQuiet(tx, input.tenantId, input.upload.id, idle, choice.announces(pipeline)));
      if (inserted) downstreamNeeded = !settled;
    }
    const { status, body } = input.response(createdAt, storageKey);
    const ours = await insertKeyIfAbsent(tx, {
      route: UPLOAD_ROUTE,
      tenant_id: input.tenantId,
      key: input.key,
      fingerprint: input.fingerprint,
      workflow_id: input.workflowId,
      upload_id: input.upload?.id ?? null,
      response_status: status,
      response_body: body,
      created_at: input.startedAt,
      ttlSeconds: input.ttlSeconds,
      traceparent: input.traceparent ?? null,
    });
    let answer: StoredResponse;
    if (ours) {
      // Written here: the answer is what was just inserted; the upload's status, what this transaction left.
      answer = {
        status,
        body,
        uploadId: ours.upload_id,
        downstreamNeeded: downstreamNeeded ?? (await downstreamPending(tx, ours.upload_id)),
      };
    } else {
      // Another route may have claimed the key since the read above (its insert won the
      // conflict): throwing rolls back the upload row too.
      const stored = await findKeyHolder(tx, input.tenantId, input.key);
      if (!stored) throw new Error(`key row for ${input.key} vanished inside its own transaction`);
      answer = await answerOfOwnRow(tx, stored, input);
    }
    if (input.importId) await endImport(tx, input.importId, input.upload ? 'committed' : 'failed');
    // Last: the tenant's usage rows are shared by its commits, held only until this one ends.
    if (ours) await chargeCommit(tx, { tenantId: input.tenantId, key: input.key, ...charge });
    return answer;
  });
}

/**
 * The answer already committed for this request under its key, if any. A workflow task can
 * run the records transaction and then be lost (worker killed, task timed out); its re-run
 * may never be offered a copy again (the client's retry is answered from the key row) or be
 * offered one the API has since deleted. The run adopts this answer instead.
 */
export async function findCommittedAnswer(
  db: Queryable,
  tenantId: string,
  key: string,
  fingerprint: string,
): Promise<StoredResponse | undefined> {
  const row = await findKeyHolder(db, tenantId, key);
  return row && isOwnAnswer(row, fingerprint) ? storedResponseOf(db, row) : undefined;
}

/** The stored answer when the row is this upload's (same route, same fingerprint, answered). */
async function answerOfOwnRow(tx: Queryable, row: KeyHolder, input: RecordsInput): Promise<StoredResponse> {
  if (!isOwnAnswer(row, input.fingerprint)) throw new KeyHeldElsewhere(row);
  return storedResponseOf(tx, row);
}

/** Whether the key row is an answered upload request with this fingerprint. */
function isOwnAnswer(row: KeyHolder, fingerprint: string): row is KeyHolder & { response_status: number; response_body: string } {
  return row.route === UPLOAD_ROUTE && row.fingerprint === fingerprint && row.response_status !== null && row.response_body !== null;
}

async function storedResponseOf(
  db: Queryable,
  row: KeyHolder & { response_status: number; response_body: string },
): Promise<StoredResponse> {
  return {
    status: row.response_status,
    body: row.response_body,
    uploadId: row.upload_id,
    downstreamNeeded: await downstreamPending(db, row.upload_id),
  };
}

/**
 * The object this upload is recorded with: its own copy, or — when its tenant dedupes by
 * SHA-256 — the object already stored with the same bytes (counted once more). Two commits
 * of the same bytes at once serialise on the unique key: the second gets the first's object.
 */
async function shareObject(tx: Queryable, u: NewUpload): Promise<string> {
  const res = await tx.query<{ storage_key: string; inserted: boolean }>(
    `INSERT INTO stored_objects (tenant_id, sha256, bytes, storage_key, refs)
     SELECT $1, $2, $3, $4, 1 FROM tenants WHERE id = $1 AND dedupe = 'sha256'
     ON CONFLICT (tenant_id, sha256, bytes, ${SAME_TARGET}) DO UPDATE SET refs = stored_objects.refs + 1
     RETURNING storage_key, (xmax = 0) AS inserted`,
    [u.tenant_id, u.sha256, u.bytes, u.storage_key],
  );
  const row = res.rows[0];
  // An instant upload offered another upload's shared object as its copy; if the count row
  // is gone (the last sharer was deleted since) the bytes are being erased: nothing is written.
  if (row?.inserted && !parseAddress(u.storage_key).key.startsWith(keyStoragePrefix(u.tenant_id, u.idempotency_key))) {
    throw new SharedObjectReleased(u.storage_key);
  }
  return row?.storage_key ?? u.storage_key;
}

/** The shared object an instant upload offered was released by a deletion before the commit. */
export class SharedObjectReleased extends Error {
  constructor(readonly storageKey: string) {
    super(`the shared object ${storageKey} was released by a deletion`);
    this.name = 'SharedObjectReleased';
  }
}

/** The stored object with these bytes on this target (null: the instance's store) under a deduping tenant, if any (instant uploads). */
export async function findSharedObject(
  db: Queryable,
  tenantId: string,
  sha256: string,
  bytes: number,
  targetId: string | null,
): Promise<string | undefined> {
  const res = await db.query<{ storage_key: string }>(
    `SELECT o.storage_key FROM stored_objects o JOIN tenants t ON t.id = o.tenant_id AND t.dedupe = 'sha256'
      WHERE o.tenant_id = $1 AND o.sha256 = $2 AND o.bytes = $3 AND o.storage_target IS NOT DISTINCT FROM $4`,
    [tenantId, sha256, bytes, targetId],
  );
  return res.rows[0]?.storage_key;
}

/** Whether an upload (or a shared object's count) names this object: such bytes are never deleted as a copy. */
export async function objectInUse(db: Queryable, storageKey: string): Promise<boolean> {
  const res = await db.query(
    'SELECT 1 FROM uploads WHERE storage_key = $1 AND NOT object_released UNION ALL SELECT 1 FROM stored_objects WHERE storage_key = $1 LIMIT 1',
    [storageKey],
  );
  return (res.rowCount ?? 0) > 0;
}

/** Settles an upload no step works on, unless a webhook step has an endpoint to announce it to; whether it did. */
async function settleIfQuiet(tx: Queryable, tenantId: string, uploadId: string, reason: string, announces: boolean): Promise<boolean> {
  const res = await tx.query(
    `UPDATE uploads SET status = 'processed', processing_status = 'skipped', processing_reason = $3, processed_at = now()
      WHERE id = $1 AND status = 'committed'
        AND (NOT $4 OR NOT EXISTS (SELECT 1 FROM webhook_endpoints WHERE tenant_id = $2 AND enabled AND deleted_at IS NULL))`,
    [uploadId, tenantId, reason, announces],
  );
  return res.rowCount === 1;
}

/** The pipeline was never declared (the API checks names first; versions are never removed). */
export class PipelineUnknown extends Error {
  constructor(readonly pipeline: string) {
    super(`no pipeline named ${pipeline}`);
    this.name = 'PipelineUnknown';
  }
}

/** The latest version of the named pipeline (absent: the default, the built-in unless the tenant declared one). */
export async function resolvePipeline(
  db: Queryable,
  tenantId: string,
  choice: Pick<PipelineChoice, 'requested' | 'defaultName' | 'builtin'>,
): Promise<PipelineVersion> {
  const name = choice.requested ?? choice.defaultName;
  const latest = await latestPipelineVersion(db, tenantId, name);
  if (latest) return { name: latest.name, version: latest.version, steps: latest.steps, validate: latest.validate };
  if (name === choice.defaultName) return choice.builtin;
  throw new PipelineUnknown(name);
}

async function downstreamPending(tx: Queryable, uploadId: string | null): Promise<boolean> {
  if (!uploadId) return false;
  const res = await tx.query<{ status: string }>('SELECT status FROM uploads WHERE id = $1', [uploadId]);
  return res.rows[0]?.status !== 'processed';
}
