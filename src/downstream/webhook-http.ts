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
}

export interface WebhookAnswer {
  status: number;
  retryAfter: string | null;
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
      await res.body.dump().catch(() => {});
      const retryAfter = res.headers['retry-after'];
      return { status: res.statusCode, retryAfter: Array.isArray(retryAfter) ? (retryAfter[0] ?? null) : (retryAfter ?? null) };
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

function findCause<T>(err: unknown, type: new (...args: never[]) => T): T | undefined {
  for (let e = err, i = 0; e && i < 5; e = (e as { cause?: unknown }).cause, i++) if (e instanceof type) return e;
  return undefined;
}
