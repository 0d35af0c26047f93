// The HTTP client webhooks are delivered with: undici with a connection-time address guard
// (src/downstream/url-guard.ts), no redirects followed (undici.request follows none), a
// per-attempt timeout. One agent per
// guard setting, so connections are pooled across deliveries.
import { Agent, request } from 'undici';
import { DisallowedUrlError, guardedLookup, type GuardOptions, type Resolver } from './url-guard';

export interface WebhookPost {
  url: string;
  headers: Record<string, string>;
  body: string;
  timeoutMs: number;
  /** Read up to this many bytes of the answer's body (else it is discarded). */
  readBody?: number;
}

export interface WebhookAnswer {
  status: number;
  retryAfter: string | null;
  /** The start of the answer's body, when asked for. */
  body?: string;
}

export class WebhookHttp {
  private readonly agent: Agent;

  constructor(opts: GuardOptions & { resolve?: Resolver }) {
    this.agent = new Agent({ connect: { lookup: guardedLookup(opts) }, keepAliveTimeout: 10_000 });
  }

  /** POSTs one delivery; throws DisallowedUrlError when the target resolves where it must not. */
  async post(p: WebhookPost): Promise<WebhookAnswer> {
    try {
      const res = await request(p.url, {
        method: 'POST',
        headers: p.headers,
        body: p.body,
        dispatcher: this.agent,
        signal: AbortSignal.timeout(p.timeoutMs),
      });
      const body = p.readBody ? await readStart(res.body, p.readBody) : undefined;
      await res.body.dump().catch(() => {}); // the answer is read; a body that fails now only closes the socket
      const retryAfter = res.headers['retry-after'];
      return {
        status: res.statusCode,
        retryAfter: Array.isArray(retryAfter) ? (retryAfter[0] ?? null) : (retryAfter ?? null),
        ...(body !== undefined ? { body } : {}),
      };
    } catch (err) {
      const disallowed = findCause(err, DisallowedUrlError);
      if (disallowed) throw disallowed;
      throw err;
    }
  }

  close(): Promise<void> {
    return this.agent.close();
  }
}

/** At most `limit` bytes of a body, as text. */
async function readStart(body: AsyncIterable<Buffer>, limit: number): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    chunks.push(chunk);
    size += chunk.length;
    if (size >= limit) break;
  }
  return Buffer.concat(chunks).subarray(0, limit).toString('utf8');
}

function findCause<T>(err: unknown, type: new (...args: never[]) => T): T | undefined {
  for (let e = err, i = 0; e && i < 5; e = (e as { cause?: unknown }).cause, i++) if (e instanceof type) return e;
  return undefined;
}

/**
 * What a failed attempt records (tenants read it in the upload's deliveries): the kind of
 * failure, never the resolved address or the library's message that would carry it.
 */
export function deliveryErrorMessage(err: unknown, timeoutMs: number): string {
  for (let e = err as { name?: string; code?: unknown; cause?: unknown } | undefined, i = 0; e && i < 5; e = e.cause as typeof e, i++) {
    if (e.name === 'TimeoutError' || e.code === 'UND_ERR_CONNECT_TIMEOUT' || e.code === 'UND_ERR_HEADERS_TIMEOUT')
      return `no answer within ${timeoutMs} ms`;
    if (typeof e.code === 'string' && /^E[A-Z]+$/.test(e.code)) return `connection failed (${e.code})`;
  }
  return 'connection failed';
}

/** Retry-After as delta-seconds or an HTTP date; bounded to a day. */
export function retryAfterMs(value: string | null): number | undefined {
  if (!value) return undefined;
  const seconds = /^\d+$/.test(value.trim()) ? Number(value) : (Date.parse(value) - Date.now()) / 1000;
  if (!Number.isFinite(seconds) || seconds < 0) return undefined;
  return Math.min(seconds, 86_400) * 1000;
}
