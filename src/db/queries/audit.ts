// Read-only queries the audit command runs over the whole database.
import type { Queryable } from '../pool';

export async function countRows(db: Queryable): Promise<{ uploads: number; keys: number; tenants: number }> {
  const res = await db.query<{ uploads: string; keys: string; tenants: string }>(
    `SELECT (SELECT count(*) FROM uploads) AS uploads,
            (SELECT count(*) FROM idempotency_keys) AS keys,
            (SELECT count(*) FROM tenants) AS tenants`,
  );
  const r = res.rows[0]!;
  return { uploads: Number(r.uploads), keys: Number(r.keys), tenants: Number(r.tenants) };
}

/** (tenant, key) pairs holding more than one upload row: must always be empty. */
export async function duplicateUploadsPerKey(db: Queryable): Promise<{ tenant_id: string; idempotency_key: string; n: number }[]> {
  const res = await db.query(
    `SELECT tenant_id, idempotency_key, count(*)::int AS n FROM uploads
      GROUP BY tenant_id, idempotency_key HAVING count(*) > 1`,
  );
  return res.rows;
}

/**
 * Key rows and upload rows that disagree about tenant, key or upload (tenancy and pairing).
 * `keyRetentionSeconds` (key TTL + tombstone TTL): an upload older than that has
 * legitimately outlived both its key row and its tombstone; null checks every upload.
 */
export async function mismatchedKeyRows(
  db: Queryable,
  keyRetentionSeconds: number | null = null,
): Promise<{ tenant_id: string; key: string; problem: string }[]> {
  const res = await db.query(
    `SELECT k.tenant_id, k.key, 'key row names an upload of another tenant or key' AS problem
       FROM idempotency_keys k JOIN uploads u ON u.id = k.upload_id
      WHERE u.tenant_id <> k.tenant_id OR u.idempotency_key <> k.key
     UNION ALL
     SELECT u.tenant_id, u.idempotency_key, 'upload row without its key row (or, once expired, its tombstone)'
       FROM uploads u
       LEFT JOIN idempotency_keys k ON k.tenant_id = u.tenant_id AND k.key = u.idempotency_key
       LEFT JOIN idempotency_tombstones t ON t.tenant_id = u.tenant_id AND t.key = u.idempotency_key
      WHERE k.key IS NULL AND t.key IS NULL
        AND ($1::float8 IS NULL OR u.created_at > now() - make_interval(secs => $1::float8))
     UNION ALL
     SELECT k.tenant_id, k.key, 'rejected upload whose key still answers success'
       FROM idempotency_keys k JOIN uploads u ON u.id = k.upload_id
      WHERE u.availability = 'rejected' AND u.status = 'processed' AND k.response_status BETWEEN 200 AND 299
     UNION ALL
     SELECT k.tenant_id, k.key, 'successful key row without an upload'
       FROM idempotency_keys k WHERE k.route = '/v1/uploads' AND k.response_status BETWEEN 200 AND 299 AND k.upload_id IS NULL`,
    [keyRetentionSeconds],
  );
  return res.rows;
}

/** An upload as the audit reads it. */
export interface AuditedUpload {
  id: string;
  tenant_id: string;
  idempotency_key: string;
  workflow_id: string;
  storage_key: string;
  bytes: string;
  sha256: string;
  shared: boolean;
  deleted: boolean;
  /** Deleted and within its restore window: whole until it ends. */
  pending: boolean;
  /** Under a legal hold. */
  held: boolean;
  released: boolean;
  erased: boolean;
  /** Rejected by its pipeline, and done with (its bytes should be gone). */
  rejected: boolean;
  personal: boolean;
  renditions: number;
  /** The record: the row's metadata, tags and version; its versions' count and last; its index entries. */
  metadata: Record<string, unknown> | null;
  tags: string[];
  record_version: number;
  versions: number;
  last_version: number | null;
  labels: string[];
}

export async function* allUploads(db: Queryable): AsyncIterable<AuditedUpload> {
  let after = '00000000-0000-0000-0000-000000000000';
  for (;;) {
    const res = await db.query(
      `SELECT u.id, u.tenant_id, u.idempotency_key, u.workflow_id, u.storage_key, u.bytes, u.sha256,
              EXISTS (SELECT 1 FROM stored_objects o WHERE o.tenant_id = u.tenant_id AND o.storage_key = u.storage_key) AS shared,
              u.deleted_at IS NOT NULL AS deleted, u.restorable_until IS NOT NULL AS pending, u.hold_reason IS NOT NULL AS held, u.object_released AS released, u.erased_at IS NOT NULL AS erased,
              (u.availability = 'rejected' AND u.status = 'processed') AS rejected,
              (u.file_name IS NOT NULL OR u.media IS NOT NULL OR u.subject IS NOT NULL OR u.token_metadata IS NOT NULL
                OR u.metadata IS NOT NULL OR u.tags <> '{}') AS personal,
              u.metadata, u.tags, u.record_version,
              (SELECT count(*)::int FROM upload_versions v WHERE v.upload_id = u.id) AS versions,
              (SELECT max(v.version) FROM upload_versions v WHERE v.upload_id = u.id) AS last_version,
              array(SELECT l.label FROM upload_labels l WHERE l.upload_id = u.id AND l.tenant_id = u.tenant_id) AS labels,
              (SELECT count(*)::int FROM renditions r WHERE r.upload_id = u.id)
                + (SELECT count(*)::int FROM image_variants v WHERE v.upload_id = u.id) AS renditions
         FROM uploads u WHERE u.id > $1 ORDER BY u.id LIMIT 500`,
      [after],
    );
    if (res.rows.length === 0) return;
    for (const r of res.rows) yield r;
    after = res.rows[res.rows.length - 1].id;
  }
}

export async function allRenditions(db: Queryable): Promise<
  {
    upload_id: string;
    tenant_id: string;
    name: string;
    storage_key: string;
    bytes: string;
    companion_bytes: string;
    upload_storage_key: string;
  }[]
> {
  // Image variants are renditions made on request: named `images/{spec}` here.
  const res = await db.query(
    `SELECT r.upload_id, u.tenant_id, r.name, r.storage_key, r.bytes, r.companion_bytes, u.storage_key AS upload_storage_key
       FROM renditions r JOIN uploads u ON u.id = r.upload_id
     UNION ALL
     SELECT v.upload_id, u.tenant_id, 'images/' || v.spec, v.storage_key, v.bytes, 0, u.storage_key
       FROM image_variants v JOIN uploads u ON u.id = v.upload_id
     ORDER BY 1, 3`,
  );
  return res.rows;
}

/** Deliveries whose event id, tenant or multiplicity break "one event id per upload and type" (upload.updated: one per version). */
/** Rendition rows of a version their upload does not serve (a re-run's leftovers, once none is under way). */
export async function unservedRenditionRows(
  db: Queryable,
): Promise<{ upload_id: string; pipeline: string; pipeline_version: number; name: string }[]> {
  const res = await db.query(
    `SELECT r.upload_id, r.pipeline, r.pipeline_version, r.name FROM renditions r JOIN uploads u ON u.id = r.upload_id
      WHERE NOT (r.pipeline = coalesce(u.pipeline, 'default') AND r.pipeline_version = coalesce(u.pipeline_version, 0))
      ORDER BY r.upload_id, r.name`,
  );
  return res.rows;
}

/** Renditions a succeeded step of the served version says it made that the upload does not serve (a live upload's). */
export async function missingServedRenditions(
  db: Queryable,
): Promise<{ upload_id: string; pipeline: string; pipeline_version: number; step_index: number; name: string }[]> {
  const res = await db.query(
    `SELECT s.upload_id, s.pipeline, s.pipeline_version, s.step_index, n.name
       FROM upload_steps s JOIN uploads u ON u.id = s.upload_id
       CROSS JOIN LATERAL jsonb_array_elements_text(
         CASE WHEN jsonb_typeof(s.output->'renditions') = 'array' THEN s.output->'renditions' ELSE '[]'::jsonb END) AS n(name)
      WHERE s.status = 'succeeded' AND u.deleted_at IS NULL AND u.availability <> 'rejected'
        AND s.pipeline = coalesce(u.pipeline, 'default') AND s.pipeline_version = coalesce(u.pipeline_version, 0)
        AND NOT EXISTS (SELECT 1 FROM renditions r WHERE r.upload_id = s.upload_id AND r.pipeline = s.pipeline
                          AND r.pipeline_version = s.pipeline_version AND r.name = n.name)
      ORDER BY s.upload_id, s.step_index, n.name`,
  );
  return res.rows;
}

export async function suspiciousDeliveries(db: Queryable): Promise<{ event_id: string; upload_id: string; problem: string }[]> {
  const res = await db.query(
    `SELECT d.event_id, d.upload_id, 'delivery tenant differs from the upload''s' AS problem
       FROM webhook_deliveries d JOIN uploads u ON u.id = d.upload_id WHERE u.tenant_id <> d.tenant_id
     UNION ALL
     SELECT min(event_id), upload_id, 'several event ids for one upload and event type'
       FROM webhook_deliveries WHERE upload_id IS NOT NULL
        AND event_type NOT IN ('upload.updated', 'upload.hold_placed', 'upload.hold_released', 'upload.restored')
      GROUP BY upload_id, event_type HAVING count(DISTINCT event_id) > 1`,
  );
  return res.rows;
}

/** Every delivery with its event's subject: its upload, or the tenant's storage migration its id names (null: none). */
export async function allDeliveries(
  db: Queryable,
): Promise<{ event_id: string; subject_id: string | null; event_type: string; delivered: boolean }[]> {
  const res = await db.query(
    `SELECT d.event_id, coalesce(d.upload_id::text, m.id::text) AS subject_id, d.event_type, d.delivered_at IS NOT NULL AS delivered
       FROM webhook_deliveries d
       LEFT JOIN storage_migrations m
         ON d.upload_id IS NULL AND m.tenant_id = d.tenant_id AND d.event_id LIKE 'evt\\_' || replace(m.id::text, '-', '') || '\\_%'`,
  );
  return res.rows;
}

/** Dedupe counts that disagree with the upload rows, deduping tenants' uploads with no count, and objects named twice without a count. */
export async function miscountedObjects(db: Queryable): Promise<{ storage_key: string; problem: string }[]> {
  const counts = await db.query<{ storage_key: string; refs: number; n: number }>(
    `SELECT o.storage_key, o.refs, count(u.id)::int AS n
       FROM stored_objects o LEFT JOIN uploads u ON u.tenant_id = o.tenant_id AND u.storage_key = o.storage_key AND NOT u.object_released
      GROUP BY o.storage_key, o.refs HAVING count(u.id) <> o.refs`,
  );
  const uncounted = await db.query<{ storage_key: string; id: string }>(
    `SELECT u.storage_key, u.id FROM uploads u JOIN tenants t ON t.id = u.tenant_id AND t.dedupe = 'sha256'
      WHERE NOT u.object_released AND NOT EXISTS (SELECT 1 FROM stored_objects o WHERE o.tenant_id = u.tenant_id AND o.storage_key = u.storage_key)`,
  );
  const doubled = await db.query<{ storage_key: string; n: number }>(
    `SELECT u.storage_key, count(*)::int AS n FROM uploads u
      WHERE NOT u.object_released AND NOT EXISTS (SELECT 1 FROM stored_objects o WHERE o.storage_key = u.storage_key)
      GROUP BY u.storage_key HAVING count(*) > 1`,
  );
  return [
    ...doubled.rows.map((r) => ({
      storage_key: r.storage_key,
      problem: `${r.n} upload rows name this object, which is not a shared (counted) one`,
    })),
    ...counts.rows.map((r) => ({ storage_key: r.storage_key, problem: `counted ${r.refs} references, ${r.n} upload rows name it` })),
    ...uncounted.rows.map((r) => ({ storage_key: r.storage_key, problem: `upload ${r.id} of a deduping tenant is not counted` })),
  ];
}

/**
 * Usage that disagrees with the upload rows, per tenant: stored bytes (uploads neither erased
 * nor rejected, and every rendition and variant row), the hourly counts of uploads and ingress (every committed upload once), the
 * stored level the hours add up to; and reservations that outlived their upload's commit.
 */
export async function miscountedUsage(db: Queryable): Promise<{ tenant_id: string; problem: string }[]> {
  const res = await db.query<{
    tenant_id: string;
    uploads: number;
    hour_uploads: number;
    bytes: number;
    ingress: number;
    stored: number;
    level: number;
    net: number;
  }>(
    `WITH ups AS (SELECT tenant_id, count(*)::float8 AS uploads, sum(bytes)::float8 AS bytes,
                         coalesce(sum(bytes) FILTER (WHERE erased_at IS NULL AND availability <> 'rejected'), 0)::float8 AS stored
                    FROM uploads GROUP BY tenant_id),
          derived AS (SELECT u.tenant_id, sum(d.bytes)::float8 AS bytes
                        FROM (SELECT upload_id, bytes + companion_bytes AS bytes FROM renditions UNION ALL SELECT upload_id, bytes FROM image_variants) d
                        JOIN uploads u ON u.id = d.upload_id GROUP BY u.tenant_id),
          hrs AS (SELECT tenant_id, sum(uploads)::float8 AS uploads, sum(ingress_bytes)::float8 AS ingress,
                         sum(stored_added - stored_released)::float8 AS net
                    FROM usage_hours GROUP BY tenant_id)
     SELECT t.id AS tenant_id, coalesce(u.uploads, 0) AS uploads, coalesce(h.uploads, 0) AS hour_uploads, coalesce(u.bytes, 0) AS bytes,
            coalesce(h.ingress, 0) AS ingress, coalesce(u.stored, 0) + coalesce(d.bytes, 0) AS stored, coalesce(g.stored_bytes, 0)::float8 AS level,
            coalesce(h.net, 0) AS net
       FROM tenants t LEFT JOIN ups u ON u.tenant_id = t.id LEFT JOIN hrs h ON h.tenant_id = t.id
       LEFT JOIN tenant_usage g ON g.tenant_id = t.id LEFT JOIN derived d ON d.tenant_id = t.id`,
  );
  const out: { tenant_id: string; problem: string }[] = [];
  for (const r of res.rows) {
    if (r.uploads !== r.hour_uploads)
      out.push({ tenant_id: r.tenant_id, problem: `${r.uploads} uploads committed, usage counts ${r.hour_uploads}` });
    if (r.bytes !== r.ingress)
      out.push({ tenant_id: r.tenant_id, problem: `${r.bytes} bytes committed, usage counts ${r.ingress} ingress bytes` });
    if (r.stored !== r.level) out.push({ tenant_id: r.tenant_id, problem: `${r.stored} bytes stored, usage says ${r.level}` });
    if (r.level !== r.net) out.push({ tenant_id: r.tenant_id, problem: `stored level ${r.level}, its hours add up to ${r.net}` });
  }
  // Every open session holds its key's reservation, of its declared length (Uppy's is learnt at completion).
  const sessions = await db.query<{ tenant_id: string; idempotency_key: string; declared: number; reserved: number | null; held: boolean }>(
    `SELECT s.tenant_id, s.idempotency_key, s.upload_length::float8 AS declared, q.bytes::float8 AS reserved, q.tenant_id IS NOT NULL AS held
       FROM resumable_sessions s
       LEFT JOIN quota_reservations q ON q.tenant_id = s.tenant_id AND q.idempotency_key = s.idempotency_key
      WHERE s.state = 'open'
        AND s.created_at > coalesce((SELECT applied_at FROM oncely_migrations WHERE id = '040_byte_quotas.sql'), '-infinity'::timestamptz)
        AND (q.tenant_id IS NULL OR (s.mode <> 'uppy' AND q.bytes IS DISTINCT FROM s.upload_length))`,
  );
  for (const r of sessions.rows)
    out.push({
      tenant_id: r.tenant_id,
      problem: r.held
        ? `open session of key ${r.idempotency_key} declares ${r.declared} bytes and reserves ${r.reserved}`
        : `open session of key ${r.idempotency_key} holds no reservation`,
    });
  const kept = await db.query<{ tenant_id: string; idempotency_key: string }>(
    `SELECT r.tenant_id, r.idempotency_key FROM quota_reservations r
       JOIN uploads u ON u.tenant_id = r.tenant_id AND u.idempotency_key = r.idempotency_key`,
  );
  for (const r of kept.rows)
    out.push({ tenant_id: r.tenant_id, problem: `key ${r.idempotency_key} committed and still holds a reservation` });
  return out;
}
