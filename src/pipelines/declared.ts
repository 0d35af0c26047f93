// What the API asks of a pipeline an upload names, before a body byte is read: that it is
// declared (422 `pipeline_unknown` otherwise, nothing stored) and whether it has a
// validation hook. Each replica keeps the latest version's answer for 5 s (the declaring
// replica forgets it at once), so an upload costs no query for it; a name not (yet)
// declared is asked again every time.
import { LRUCache } from 'lru-cache';
import type { Pool } from '../db/pool';
import { latestPipelineVersion } from '../db/queries/pipelines';
import { dependency, problem, type ErrorCode } from '../errors';
import { PipelineName, type ValidationHookSpec } from './catalogue';
import { DEFAULT_PIPELINE } from './steps';

/**
 * The pipeline field of a request (X-Pipeline, a form field, tus or Uppy metadata, a plan),
 * checked for form; `default` is the same as naming none. `code` is the problem its part answers.
 */
export function parsePipelineName(value: string | undefined, code: ErrorCode): string | undefined {
  if (value === undefined) return undefined;
  const name = value.trim();
  const parsed = PipelineName.safeParse(name);
  if (!parsed.success) throw problem(code, `pipeline: ${parsed.error.issues[0]?.message}.`);
  return name === DEFAULT_PIPELINE ? undefined : name;
}

/** What an upload naming the pipeline is checked against before it is read. */
export interface PipelineAdmission {
  name: string;
  validate: ValidationHookSpec | null;
}

export class DeclaredPipelines {
  private readonly latest = new LRUCache<string, PipelineAdmission>({ max: 10_000, ttl: 5_000 });
  /** Lookups under way: concurrent uploads of one tenant share one query. */
  private readonly asking = new Map<string, Promise<PipelineAdmission>>();

  constructor(private readonly pool: Pool) {}

  /**
   * The named pipeline's admission (undefined: the tenant's default, declared or built in);
   * throws `pipeline_unknown` when the tenant never declared the name.
   */
  async admission(tenantId: string, name: string | undefined): Promise<PipelineAdmission> {
    const wanted = name ?? DEFAULT_PIPELINE;
    const id = `${tenantId}/${wanted}`;
    const cached = this.latest.get(id);
    if (cached) return cached;
    let asked = this.asking.get(id);
    if (!asked) {
      asked = this.ask(tenantId, wanted, name !== undefined).finally(() => this.asking.delete(id));
      this.asking.set(id, asked);
    }
    return asked;
  }

  private async ask(tenantId: string, wanted: string, named: boolean): Promise<PipelineAdmission> {
    const row = await dependency('database_unavailable', () => latestPipelineVersion(this.pool, tenantId, wanted));
    if (!row && named) throw problem('pipeline_unknown', `No pipeline named "${wanted}": declare it with POST /v1/pipelines first.`);
    const admission = { name: wanted, validate: row?.validate ?? null };
    this.latest.set(`${tenantId}/${wanted}`, admission);
    return admission;
  }

  /** Throws `pipeline_unknown` unless the tenant declared `name` (absent: the default, always there). */
  async assertDeclared(tenantId: string, name: string | undefined): Promise<void> {
    await this.admission(tenantId, name);
  }

  /** A new version was declared here: the next upload naming it reads it. */
  forget(tenantId: string, name: string): void {
    this.latest.delete(`${tenantId}/${name}`);
  }
}
