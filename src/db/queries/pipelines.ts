// Pipeline versions per tenant, and each upload's step outcomes.
import { isDeepStrictEqual } from 'node:util';
import type { Pool, Queryable } from '../pool';
import { withTransaction } from '../pool';
import { countLive, lockTenant, QuotaReached } from './quotas';
import type { PipelineStep, ValidationHookSpec } from '../../pipelines/catalogue';
import type { PipelineVersion } from '../../pipelines/steps';

export interface PipelineVersionRow extends PipelineVersion {
  createdAt: Date;
}

const COLUMNS = 'name, version, steps, validate, created_at AS "createdAt"';

/**
 * Records the declaration as the name's next version, unless it equals the latest version
 * (then that one is answered, `created` false). Declarations of one tenant run one at a time
 * (under its row's lock): versions are numbered, and names and versions counted against
 * `limits` (QuotaReached past them), in turn. The name's signing secret is stored with its
 * first version (`secretCreated`: this call stored `sealedSecret`).
 */
export async function declarePipeline(
  pool: Pool,
  tenantId: string,
  d: { name: string; steps: PipelineStep[]; validate?: ValidationHookSpec },
  sealedSecret: string,
  limits: { pipelines: number; versions: number },
): Promise<{ row: PipelineVersionRow; created: boolean; secretCreated: boolean }> {
  return withTransaction(pool, async (tx) => {
    await lockTenant(tx, tenantId);
    const latest = await latestPipelineVersion(tx, tenantId, d.name);
    if (latest && isDeepStrictEqual(latest.steps, d.steps) && isDeepStrictEqual(latest.validate ?? null, d.validate ?? null))
      return { row: latest, created: false, secretCreated: false };
    if (!latest && (await countLive(tx, tenantId, 'pipelines')) >= limits.pipelines) throw new QuotaReached('pipelines', limits.pipelines);
    if (latest && latest.version >= limits.versions)
      throw new QuotaReached('pipeline_versions', limits.versions, `pipeline ${d.name} already has ${limits.versions} versions`);
    const secret = await tx.query('INSERT INTO pipeline_secrets (tenant_id, name, secret) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING', [
      tenantId,
      d.name,
      sealedSecret,
    ]);
    const res = await tx.query<PipelineVersionRow>(
      `INSERT INTO pipeline_versions (tenant_id, name, version, steps, validate) VALUES ($1, $2, $3, $4, $5) RETURNING ${COLUMNS}`,
      [tenantId, d.name, (latest?.version ?? 0) + 1, JSON.stringify(d.steps), d.validate ? JSON.stringify(d.validate) : null],
    );
    return { row: res.rows[0]!, created: true, secretCreated: (secret.rowCount ?? 0) > 0 };
  });
}

/** The sealed signing secret of a tenant's pipeline. */
export async function pipelineSecret(db: Queryable, tenantId: string, name: string): Promise<string | undefined> {
  const res = await db.query<{ secret: string }>('SELECT secret FROM pipeline_secrets WHERE tenant_id = $1 AND name = $2', [
    tenantId,
    name,
  ]);
  return res.rows[0]?.secret;
}

export async function latestPipelineVersion(db: Queryable, tenantId: string, name: string): Promise<PipelineVersionRow | undefined> {
  const res = await db.query<PipelineVersionRow>(
    `SELECT ${COLUMNS} FROM pipeline_versions WHERE tenant_id = $1 AND name = $2 ORDER BY version DESC LIMIT 1`,
    [tenantId, name],
  );
  return res.rows[0];
}

export async function findPipelineVersion(
  db: Queryable,
  tenantId: string,
  name: string,
  version: number,
): Promise<PipelineVersionRow | undefined> {
  const res = await db.query<PipelineVersionRow>(
    `SELECT ${COLUMNS} FROM pipeline_versions WHERE tenant_id = $1 AND name = $2 AND version = $3`,
    [tenantId, name, version],
  );
  return res.rows[0];
}

/** The latest version of each of the tenant's pipelines, by name. */
/** A page of the tenant's pipelines, each at its latest version, in name order after `after`; `limit` at most. */
export async function pagePipelines(
  db: Queryable,
  tenantId: string,
  page: { after?: string; limit: number },
): Promise<PipelineVersionRow[]> {
  const res = await db.query<PipelineVersionRow>(
    `SELECT DISTINCT ON (name) ${COLUMNS} FROM pipeline_versions
      WHERE tenant_id = $1 AND ($2::text IS NULL OR name > $2) ORDER BY name, version DESC LIMIT $3`,
    [tenantId, page.after ?? null, page.limit],
  );
  return res.rows;
}

/** Whether the tenant declared a pipeline of this name. */
export async function pipelineExists(db: Queryable, tenantId: string, name: string): Promise<boolean> {
  const res = await db.query('SELECT 1 FROM pipeline_versions WHERE tenant_id = $1 AND name = $2 LIMIT 1', [tenantId, name]);
  return (res.rowCount ?? 0) > 0;
}

/** The pipeline version an upload was committed with (NULL columns: the built-in default). */
export async function uploadPipeline(
  db: Queryable,
  uploadId: string,
): Promise<{ name: string | null; version: number | null } | undefined> {
  const res = await db.query<{ name: string | null; version: number | null }>(
    'SELECT pipeline AS name, pipeline_version AS version FROM uploads WHERE id = $1',
    [uploadId],
  );
  return res.rows[0];
}

export interface StepOutcomeRow {
  step_index: number;
  type: string;
  status: 'succeeded' | 'skipped' | 'failed' | 'rejected';
  reason: string | null;
  output: Record<string, unknown> | null;
  finished_at: Date;
}

/** Records a step's outcome once (a retry keeps the first); nothing for a deleted upload. */
export async function recordStepOutcome(
  db: Queryable,
  o: {
    uploadId: string;
    pipeline: string;
    version: number;
    index: number;
    type: string;
    status: StepOutcomeRow['status'];
    reason: string | null;
    output: unknown;
  },
): Promise<void> {
  await db.query(
    `INSERT INTO upload_steps (upload_id, pipeline, pipeline_version, step_index, type, status, reason, output)
     SELECT $1, $2, $3, $4, $5, $6, $7, $8 FROM uploads WHERE id = $1 AND deleted_at IS NULL
     ON CONFLICT DO NOTHING`,
    [o.uploadId, o.pipeline, o.version, o.index, o.type, o.status, o.reason, JSON.stringify(o.output ?? null)],
  );
}

export async function listStepOutcomes(db: Queryable, uploadId: string, pipeline: string, version: number): Promise<StepOutcomeRow[]> {
  const res = await db.query<StepOutcomeRow>(
    `SELECT step_index, type, status, reason, output, finished_at FROM upload_steps
      WHERE upload_id = $1 AND pipeline = $2 AND pipeline_version = $3 ORDER BY step_index`,
    [uploadId, pipeline, version],
  );
  return res.rows;
}
