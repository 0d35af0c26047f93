// Calls to a tenant's own URLs on behalf of its pipeline (the validation hook, http.call
// steps): JSON POSTs signed like webhooks (Standard Webhooks, with the pipeline's signing
// secret), through the webhooks' guarded client, so the address connected to is the one
// checked. `id` is both `webhook-id` and `Idempotency-Key`: every retry of one call carries
// the same one, and the tenant can dedupe.
import { Webhook } from 'standardwebhooks';
import type { Pool } from '../db/pool';
import { pipelineSecret } from '../db/queries/pipelines';
import { pipelineSecretContext, type SecretBox } from '../secret-box';
import { assertDeliverableUrl, type GuardOptions, type Resolver } from './url-guard';
import type { WebhookHttp } from './webhook-http';

export interface TenantCall {
  url: string;
  tenantId: string;
  pipeline: string;
  id: string;
  type: string;
  data: Record<string, unknown>;
  timeoutMs: number;
}

export interface TenantAnswer {
  status: number;
  /** The tenant's reason, from a JSON `message` (or `detail`, `error`) or the text: one line, at most 300 characters. */
  message: string | null;
  /** A JSON answer's `data`. */
  data: unknown;
  retryAfter: string | null;
}

export class TenantCalls {
  constructor(private readonly deps: { pool: Pool; secrets: SecretBox; http: WebhookHttp; guard: GuardOptions & { resolve?: Resolver } }) {}

  /** Sends the call; throws DisallowedUrlError for a target that must not be reached, and the network's errors. */
  async call(c: TenantCall): Promise<TenantAnswer> {
    await assertDeliverableUrl(c.url, this.deps.guard);
    const sealed = await pipelineSecret(this.deps.pool, c.tenantId, c.pipeline);
    if (!sealed) throw new Error(`pipeline ${c.pipeline} has no signing secret`);
    const sentAt = new Date();
    const body = JSON.stringify({ type: c.type, timestamp: sentAt.toISOString(), data: c.data });
    const signer = new Webhook(this.deps.secrets.open(sealed, pipelineSecretContext(c.tenantId, c.pipeline)));
    const answer = await this.deps.http.post({
      url: c.url,
      body,
      timeoutMs: c.timeoutMs,
      readBody: 4096,
      headers: {
        'content-type': 'application/json',
        'user-agent': 'Oncely-Pipelines/1',
        'idempotency-key': c.id,
        'webhook-id': c.id,
        'webhook-timestamp': String(Math.floor(sentAt.getTime() / 1000)),
        'webhook-signature': signer.sign(c.id, sentAt, body),
      },
    });
    return { status: answer.status, retryAfter: answer.retryAfter, ...parseAnswer(answer.body ?? '') };
  }
}

function parseAnswer(text: string): { message: string | null; data: unknown } {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  const record = json && typeof json === 'object' ? (json as Record<string, unknown>) : undefined;
  const said = [record?.message, record?.detail, record?.error].find((v) => typeof v === 'string') as string | undefined;
  const message = (record ? said : text)?.replace(/\s+/g, ' ').trim().slice(0, 300) || null;
  return { message, data: record?.data ?? null };
}
