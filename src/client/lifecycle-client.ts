// What a client does with stored uploads: list them, read their bytes (with Range), sign
// download URLs, delete them, and read and resend webhook events. Platform-neutral (Node and
// browsers). Every call is safe to repeat, so transient failures (network errors,
// 429/5xx) are retried with the upload client's backoff; a mutating call carries one
// Idempotency-Key across its retries. Other answers throw OncelyApiError with the problem.
import { isRetryableStatus, nextDelayMs } from './retry-policy';

export class OncelyApiError extends Error {
  constructor(
    readonly status: number,
    readonly problem: { error?: string; detail?: string } & Record<string, unknown>,
  ) {
    super(`${status} ${problem.error ?? ''}: ${problem.detail ?? ''}`.trim());
    this.name = 'OncelyApiError';
  }
}

export interface UploadListQuery {
  cursor?: string;
  limit?: number;
  status?: 'committed' | 'processed' | 'deleted';
  contentType?: string;
  createdAfter?: string;
  createdBefore?: string;
  idempotencyKey?: string;
}

export interface EventListQuery {
  cursor?: string;
  limit?: number;
  type?: string;
  uploadId?: string;
  deliveryFailed?: boolean;
}

export interface Page<T> {
  items: T[];
  nextCursor: string | null;
}

export interface LifecycleClientOptions {
  baseUrl: string;
  token: string;
  fetch?: typeof fetch;
  maxAttempts?: number;
}

export class LifecycleClient {
  private readonly fetch: typeof fetch;
  private readonly baseUrl: string;

  constructor(private readonly opts: LifecycleClientOptions) {
    this.fetch = opts.fetch ?? globalThis.fetch.bind(globalThis);
    this.baseUrl = opts.baseUrl.replace(/\/$/, '');
  }

  listUploads(q: UploadListQuery = {}): Promise<Page<Record<string, any>>> {
    return this.json('GET', `/v1/uploads${query(q)}`);
  }

  /** Every upload matching `q`, page after page. */
  async *allUploads(q: Omit<UploadListQuery, 'cursor'> = {}): AsyncIterable<Record<string, any>> {
    let cursor: string | undefined;
    do {
      const page = await this.listUploads({ ...q, cursor });
      yield* page.items;
      cursor = page.nextCursor ?? undefined;
    } while (cursor);
  }

  /** The upload; with `waitSeconds`, once processed or after that long. */
  getUpload(id: string, o: { waitSeconds?: number } = {}): Promise<Record<string, any>> {
    return this.json('GET', `/v1/uploads/${encodeURIComponent(id)}${o.waitSeconds ? `?wait=${o.waitSeconds}` : ''}`);
  }

  /** The original's bytes (a 200 or, with `range`, a 206 answer; its body unread). */
  content(id: string, o: { range?: string; ifRange?: string; signal?: AbortSignal } = {}): Promise<Response> {
    const headers: Record<string, string> = {};
    if (o.range) headers.range = o.range;
    if (o.ifRange) headers['if-range'] = o.ifRange;
    return this.send('GET', `/v1/uploads/${encodeURIComponent(id)}/content`, { headers, signal: o.signal });
  }

  downloadUrl(
    id: string,
    o: { expiresInSeconds?: number; disposition?: 'inline' | 'attachment'; rendition?: string } = {},
  ): Promise<{ url: string; expiresAt: string; disposition: string }> {
    return this.json('POST', `/v1/uploads/${encodeURIComponent(id)}/download-urls`, { body: o });
  }

  /** Deletes with erasure; waits up to `waitSeconds` for it to finish (status `deleted`), else answers `deleting`. */
  deleteUpload(
    id: string,
    o: { waitSeconds?: number } = {},
  ): Promise<{ uploadId: string; status: string; deletedAt: string | null; erasedAt: string | null }> {
    return this.json('DELETE', `/v1/uploads/${encodeURIComponent(id)}`, {
      headers: { prefer: `wait=${o.waitSeconds ?? 10}` },
      idempotent: true,
    });
  }

  deleteUploads(ids: string[]): Promise<{ items: { uploadId: string; status: string }[] }> {
    return this.json('POST', '/v1/uploads/delete', { body: { ids }, idempotent: true });
  }

  listEvents(q: EventListQuery = {}): Promise<Page<Record<string, any>>> {
    return this.json(
      'GET',
      `/v1/events${query({ ...q, deliveryFailed: q.deliveryFailed === undefined ? undefined : String(q.deliveryFailed) })}`,
    );
  }

  getEvent(id: string): Promise<Record<string, any>> {
    return this.json('GET', `/v1/events/${encodeURIComponent(id)}`);
  }

  redeliver(eventId: string, o: { endpointId?: string; waitSeconds?: number } = {}): Promise<Record<string, any>> {
    return this.json('POST', `/v1/events/${encodeURIComponent(eventId)}/redeliver`, {
      body: o.endpointId ? { endpointId: o.endpointId } : {},
      headers: { prefer: `wait=${o.waitSeconds ?? 30}` },
      idempotent: true,
    });
  }

  /** Mints an upload token (a key holding tokens:mint): the bearer for one user's uploads, within limits. */
  createUploadToken(limits: {
    expiresInSeconds?: number;
    maxBytes?: number;
    allowedTypes?: string[];
    maxUploads?: number;
    subject?: string;
    metadata?: Record<string, string>;
  }): Promise<{ token: string; id: string; expiresAt: string } & Record<string, any>> {
    return this.json('POST', '/v1/upload-tokens', { body: limits, idempotent: true });
  }

  async revokeUploadToken(id: string): Promise<void> {
    await this.send('DELETE', `/v1/upload-tokens/${encodeURIComponent(id)}`);
  }

  /**
   * Imports the file at `body.url` under `key` (every repeat answers the same upload): 201
   * with the upload once committed within `waitSeconds`, else 202 with its progress. An
   * import that failed answers its recorded problem (OncelyApiError).
   */
  async importUrl(
    key: string,
    body: { url: string; fileName?: string; sha256?: string; contentType?: string; pipeline?: string },
    o: { waitSeconds?: number } = {},
  ): Promise<{ status: number; body: Record<string, any> }> {
    const res = await this.send('POST', '/v1/imports', {
      body,
      headers: { 'idempotency-key': key, prefer: `wait=${o.waitSeconds ?? 0}` },
    });
    return { status: res.status, body: (await res.json()) as Record<string, any> };
  }

  recover(endpointId: string, since: string, until?: string): Promise<Record<string, any>> {
    return this.json('POST', `/v1/webhook-endpoints/${encodeURIComponent(endpointId)}/recover`, {
      body: until ? { since, until } : { since },
      idempotent: true,
    });
  }

  private async json<T>(
    method: string,
    path: string,
    o: { body?: unknown; headers?: Record<string, string>; idempotent?: boolean } = {},
  ): Promise<T> {
    const res = await this.send(method, path, o);
    return (await res.json()) as T;
  }

  private async send(
    method: string,
    path: string,
    o: { body?: unknown; headers?: Record<string, string>; idempotent?: boolean; signal?: AbortSignal } = {},
  ): Promise<Response> {
    const headers: Record<string, string> = { authorization: `Bearer ${this.opts.token}`, ...o.headers };
    if (o.body !== undefined) headers['content-type'] = 'application/json';
    if (o.idempotent) headers['idempotency-key'] = `oncely-client-${crypto.randomUUID()}`;
    const maxAttempts = this.opts.maxAttempts ?? 6;
    for (let attempt = 0; ; attempt++) {
      let res: Response | undefined;
      try {
        res = await this.fetch(`${this.baseUrl}${path}`, {
          method,
          headers,
          body: o.body === undefined ? undefined : JSON.stringify(o.body),
          signal: o.signal,
        });
      } catch (err) {
        if (o.signal?.aborted || attempt + 1 >= maxAttempts) throw err;
      }
      if (res && res.ok) return res;
      if (res && (!isRetryableStatus(res.status) || attempt + 1 >= maxAttempts)) {
        const problem = (await res.json().catch(() => ({}))) as OncelyApiError['problem'];
        throw new OncelyApiError(res.status, problem);
      }
      await res?.arrayBuffer().catch(() => undefined); // drained only to reuse the connection
      await new Promise((r) => setTimeout(r, nextDelayMs(attempt, res?.headers.get('retry-after'))));
    }
  }
}

function query(q: object): string {
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(q as Record<string, unknown>))
    if (v !== undefined && v !== null && v !== '') params.set(k, String(v));
  const s = params.toString();
  return s ? `?${s}` : '';
}
