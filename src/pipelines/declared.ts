// Whether a pipeline an upload names is declared, asked before a body byte is read (a name
// with no declaration answers 422 and nothing is stored). Versions are never removed, so a
// name once found stays found: each replica asks the database once per (tenant, name).
import { LRUCache } from 'lru-cache';
import type { Pool } from '../db/pool';
import { pipelineExists } from '../db/queries/pipelines';
import { dependency, problem, type ErrorCode } from '../errors';
import { PipelineName } from './catalogue';
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

export class DeclaredPipelines {
  private readonly known = new LRUCache<string, true>({ max: 10_000 });

  constructor(private readonly pool: Pool) {}

  /** Throws `pipeline_unknown` unless the tenant declared `name` (absent: the default, always there). */
  async assertDeclared(tenantId: string, name: string | undefined): Promise<void> {
    if (name === undefined) return;
    const id = `${tenantId}/${name}`;
    if (this.known.has(id)) return;
    if (!(await dependency('database_unavailable', () => pipelineExists(this.pool, tenantId, name))))
      throw problem('pipeline_unknown', `No pipeline named "${name}": declare it with POST /v1/pipelines first.`);
    this.known.set(id, true);
  }
}
