// Images on request: a tenant's presets (immutable versions of a name, as pipelines are),
// its spec policy, and the variants rendered once per (upload, canonical spec).
import { checkDerivedBytes, countRender } from '../db/queries/byte-quotas';
import { statement, withTransaction, type Pool, type Queryable } from '../db/pool';
import type { UploadRow } from '../db/queries/uploads';
import { countLive, insertWithinQuota, lockTenant, QuotaReached } from '../db/queries/quotas';

export interface ImagePresetRow {
  name: string;
  version: number;
  spec: string;
  createdAt: Date;
}

const PRESET_COLUMNS = 'name, version, spec, created_at AS "createdAt"';

/**
 * Records `spec` as the name's next version unless it equals the latest (then that one is
 * answered, `created` false); one tenant's declarations run one at a time under its row's lock.
 */
export async function declareImagePreset(
  pool: Pool,
  tenantId: string,
  d: { name: string; spec: string },
  limits: { presets: number; versions: number },
): Promise<{ row: ImagePresetRow; created: boolean }> {
  return withTransaction(pool, async (tx) => {
    await lockTenant(tx, tenantId);
    const latest = await latestImagePreset(tx, tenantId, d.name);
    if (latest?.spec === d.spec) return { row: latest, created: false };
    if (!latest && (await countLive(tx, tenantId, 'image_presets')) >= limits.presets)
      throw new QuotaReached('image_presets', limits.presets);
    if (latest && latest.version >= limits.versions)
      throw new QuotaReached('image_preset_versions', limits.versions, `image preset ${d.name} already has ${limits.versions} versions`);
    const res = await tx.query<ImagePresetRow>(
      `INSERT INTO image_presets (tenant_id, name, version, spec) VALUES ($1, $2, $3, $4) RETURNING ${PRESET_COLUMNS}`,
      [tenantId, d.name, (latest?.version ?? 0) + 1, d.spec],
    );
    return { row: res.rows[0]!, created: true };
  });
}

export async function latestImagePreset(db: Queryable, tenantId: string, name: string): Promise<ImagePresetRow | undefined> {
  const res = await db.query<ImagePresetRow>(
    `SELECT ${PRESET_COLUMNS} FROM image_presets WHERE tenant_id = $1 AND name = $2 ORDER BY version DESC LIMIT 1`,
    [tenantId, name],
  );
  return res.rows[0];
}

/** A page of the tenant's presets, each at its latest version, in name order after `after`. */
export async function pageImagePresets(
  db: Queryable,
  tenantId: string,
  page: { after?: string; limit: number },
): Promise<ImagePresetRow[]> {
  const res = await db.query<ImagePresetRow>(
    `SELECT DISTINCT ON (name) ${PRESET_COLUMNS} FROM image_presets
      WHERE tenant_id = $1 AND ($2::text IS NULL OR name > $2) ORDER BY name, version DESC LIMIT $3`,
    [tenantId, page.after ?? null, page.limit],
  );
  return res.rows;
}

/** The tenant's upload with the tenant's spec policy, in one round trip (the variant route's first read). */
export async function findImageSource(
  db: Queryable,
  tenantId: string,
  id: string,
): Promise<(UploadRow & { image_specs: 'presets' | 'any' }) | undefined> {
  const res = await db.query<UploadRow & { image_specs: 'presets' | 'any' }>(
    statement(
      'find_image_source',
      'SELECT u.*, t.image_specs FROM uploads u JOIN tenants t ON t.id = u.tenant_id WHERE u.tenant_id = $1 AND u.id = $2',
      [tenantId, id],
    ),
  );
  return res.rows[0];
}

export interface ImageVariantRow {
  upload_id: string;
  spec: string;
  storage_key: string;
  content_type: string;
  bytes: string;
  width: number;
  height: number;
  created_at: Date;
}

export async function findImageVariant(db: Queryable, uploadId: string, spec: string): Promise<ImageVariantRow | undefined> {
  const res = await db.query<ImageVariantRow>(
    statement('find_image_variant', 'SELECT * FROM image_variants WHERE upload_id = $1 AND spec = $2', [uploadId, spec]),
  );
  return res.rows[0];
}

/** The upload's stored variants in spec order, after `afterSpec`; `limit` rows at most. */
export async function pageImageVariants(
  db: Queryable,
  uploadId: string,
  afterSpec: string | undefined,
  limit: number,
): Promise<ImageVariantRow[]> {
  const res = await db.query<ImageVariantRow>(
    'SELECT * FROM image_variants WHERE upload_id = $1 AND ($2::text IS NULL OR spec > $2) ORDER BY spec LIMIT $3',
    [uploadId, afterSpec ?? null, limit],
  );
  return res.rows;
}

export async function countImageVariants(db: Queryable, uploadId: string): Promise<number> {
  return (await db.query<{ n: number }>('SELECT count(*)::int AS n FROM image_variants WHERE upload_id = $1', [uploadId])).rows[0]!.n;
}

/**
 * Records a rendered variant once, under the upload row's lock: the row already there for
 * (upload, spec) wins; none while the upload is deleted; none past `maxVariants` distinct
 * variants (concurrent renders of new specs cannot overshoot the cap); ByteQuotaExceeded
 * when its bytes would pass the tenant's maxStoredBytes.
 */
export async function insertImageVariant(
  pool: Pool,
  v: Omit<ImageVariantRow, 'bytes' | 'created_at'> & { bytes: number },
  maxVariants: number | undefined,
): Promise<{ row: ImageVariantRow } | { refused: 'deleted' | 'full' }> {
  return withTransaction(pool, async (tx) => {
    const live = await tx.query('SELECT 1 FROM uploads WHERE id = $1 AND deleted_at IS NULL FOR UPDATE', [v.upload_id]);
    if (!live.rowCount) return { refused: 'deleted' };
    const kept = await findImageVariant(tx, v.upload_id, v.spec);
    if (kept) return { row: kept };
    if (maxVariants !== undefined && (await countImageVariants(tx, v.upload_id)) >= maxVariants) return { refused: 'full' };
    await checkDerivedBytes(tx, v.upload_id, v.bytes);
    const res = await tx.query<ImageVariantRow>(
      `INSERT INTO image_variants (upload_id, spec, storage_key, content_type, bytes, width, height)
       VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING *`,
      [v.upload_id, v.spec, v.storage_key, v.content_type, v.bytes, v.width, v.height],
    );
    await releaseRender(tx, v.upload_id, v.spec);
    await countRender(tx, v.upload_id);
    return { row: res.rows[0]! };
  });
}

/**
 * Admits the render of (upload, spec): one already under way is joined (true: nothing new
 * starts); a new one is recorded while the tenant has fewer than `max` under way, counted under
 * the tenant's lock (else QuotaReached).
 */
export async function claimRender(
  pool: Pool,
  r: { tenantId: string; uploadId: string; spec: string; ttlSeconds: number },
  max: number,
): Promise<boolean> {
  const live = (tx: Queryable) =>
    tx.query('SELECT 1 FROM image_renders WHERE upload_id = $1 AND spec = $2 AND expires_at > now()', [r.uploadId, r.spec]);
  return insertWithinQuota(
    pool,
    r.tenantId,
    'renders_in_flight',
    max,
    async (tx) => {
      await tx.query(
        `INSERT INTO image_renders (upload_id, spec, tenant_id, expires_at) VALUES ($1, $2, $3, now() + make_interval(secs => $4))
         ON CONFLICT (upload_id, spec) DO UPDATE SET expires_at = EXCLUDED.expires_at`,
        [r.uploadId, r.spec, r.tenantId, r.ttlSeconds],
      );
      return false;
    },
    async (tx) => ((await live(tx)).rowCount ? true : undefined),
  );
}

/** The render of (upload, spec) is over (recorded, or failed): its slot is free. */
export async function releaseRender(db: Queryable, uploadId: string, spec: string): Promise<void> {
  await db.query('DELETE FROM image_renders WHERE upload_id = $1 AND spec = $2', [uploadId, spec]);
}
