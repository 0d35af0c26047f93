// The console reads and acts through the API itself, in-process: each request is the /v1
// route a client would call, with the signed-in session's key as its credential (a binding
// only this process can set), so its scopes, tenant, validation and Idempotency-Key replay
// are the API's own. An operator's requests carry ADMIN_TOKEN to /admin.
import type { AppEnv } from '../http/env';
import type { ConsoleCaller } from './sessions';

/** How long an action waits for its own first submission to finish. */
const IN_PROGRESS_WAIT_MS = 15_000;

export type ApiFetch = (req: Request, env: AppEnv['Bindings']) => Response | Promise<Response>;

/** A problem+json answer, as the console shows it. */
export interface ApiProblem {
  status: number;
  code: string;
  title: string;
  detail?: string;
}

export class ApiError extends Error {
  constructor(readonly problem: ApiProblem) {
    super(problem.detail ?? problem.title);
  }
}

export interface ApiCall {
  query?: Record<string, string | undefined>;
  body?: unknown;
  idempotencyKey?: string;
  requestId?: string;
  headers?: Record<string, string>;
}

export class InProcessApi {
  constructor(
    private readonly fetch: () => ApiFetch,
    private readonly adminToken: string | undefined,
  ) {}

  /** The API's answer as it is (content, images, problems). */
  async request(caller: ConsoleCaller, method: string, path: string, call: ApiCall = {}): Promise<Response> {
    const url = new URL(path, 'http://console.internal');
    for (const [k, v] of Object.entries(call.query ?? {})) if (v !== undefined && v !== '') url.searchParams.set(k, v);
    const headers = new Headers();
    if (call.body !== undefined) headers.set('content-type', 'application/json');
    if (call.idempotencyKey) headers.set('idempotency-key', call.idempotencyKey);
    if (call.requestId) headers.set('x-request-id', call.requestId);
    for (const [k, v] of Object.entries(call.headers ?? {})) headers.set(k, v);
    if (caller.kind === 'operator') {
      if (!this.adminToken) throw new ApiError({ status: 403, code: 'admin_disabled', title: 'ADMIN_TOKEN is not set' });
      headers.set('authorization', `Bearer ${this.adminToken}`);
    }
    const req = new Request(url, { method, headers, body: call.body === undefined ? undefined : JSON.stringify(call.body) });
    return this.fetch()(req, caller.kind === 'tenant' ? { inProcessCredential: caller.credential } : {});
  }

  /**
   * A JSON answer; ApiError with the problem when it is not 2xx. A keyed action whose first
   * submission is still running (a double click) waits for it and gets its answer replayed.
   */
  async json<T>(caller: ConsoleCaller, method: string, path: string, call: ApiCall = {}): Promise<T> {
    let res = await this.request(caller, method, path, call);
    for (let waited = 0; res.status === 409 && call.idempotencyKey && waited < IN_PROGRESS_WAIT_MS; waited += 250) {
      const body = (await res
        .clone()
        .json()
        .catch(() => ({}))) as { error?: string };
      if (body.error !== 'idempotency_in_progress') break;
      await new Promise((r) => setTimeout(r, 250));
      res = await this.request(caller, method, path, call);
    }
    const text = await res.text();
    const body = text ? (JSON.parse(text) as unknown) : undefined;
    if (!res.ok) {
      const p = (body ?? {}) as { error?: string; title?: string; detail?: string };
      throw new ApiError({ status: res.status, code: p.error ?? 'error', title: p.title ?? res.statusText, detail: p.detail });
    }
    return body as T;
  }

  get<T>(caller: ConsoleCaller, path: string, query?: ApiCall['query'], requestId?: string): Promise<T> {
    return this.json<T>(caller, 'GET', path, { query, requestId });
  }
}
