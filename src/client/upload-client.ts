// The upload client: sends one pending upload until it has a final answer, always with
// the same Idempotency-Key. Retries only what may succeed later (network errors,
// timeouts, 408/409/425/429/5xx), with full-jitter backoff capped at 30 s and the
// server's Retry-After taking precedence; other 4xx are final. After a 202 it polls the
// key until the upload completes. Platform-neutral: Node and browsers supply the body.
import { DEFAULT_BACKOFF, isRetryableStatus, nextDelayMs, type BackoffOptions } from './retry-policy';
import type { PendingUpload, UploadBody, UploadResult } from './types';

export interface UploadClientOptions {
  baseUrl: string;
  token: string;
  /** Opens the upload's bytes for one attempt; `onBytes` reports progress as they are read. */
  openBody: (pending: PendingUpload, onBytes: (n: number) => void) => Promise<UploadBody>;
  fetch?: typeof fetch;
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  random?: () => number;
  backoff?: BackoffOptions;
  /** Give up after this many attempts (the pending upload stays in the outbox). */
  maxAttempts?: number;
  /** Bound on one attempt (sending + waiting); the next attempt reuses the key. */
  attemptTimeoutMs?: number;
  /** How long the server may wait for the result before answering 202 (Prefer: wait). */
  waitSeconds?: number;
  /** Opens bytes [start, end) of the upload: with it, large uploads go resumable (tus). */
  openRange?: (pending: PendingUpload, start: number, end: number, onBytes: (n: number) => void) => Promise<UploadBody>;
  /** Uploads of at least this many bytes go through /v1/tus when `openRange` is given (default 64 MiB). */
  resumableFromBytes?: number;
  /** Bytes per PATCH of a resumable upload (default 16 MiB). */
  resumableChunkBytes?: number;
}

export interface SendOptions {
  signal?: AbortSignal;
  onProgress?: (sent: number, total: number) => void;
  onAttempt?: (attempt: number, outcome: string, delayMs: number) => void;
  /** A resumable upload got its URL (persist it: a later run resumes there). */
  onUploadUrl?: (pending: PendingUpload) => Promise<void> | void;
}

export class GaveUpError extends Error {
  constructor(
    readonly attempts: number,
    readonly last: string,
  ) {
    super(`gave up after ${attempts} attempts (last: ${last})`);
    this.name = 'GaveUpError';
  }
}

const defaultSleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const t = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => (clearTimeout(t), reject(signal.reason)), { once: true });
  });

export class UploadClient {
  private readonly fetch: typeof fetch;
  private readonly sleep: NonNullable<UploadClientOptions['sleep']>;

  constructor(private readonly opts: UploadClientOptions) {
    this.fetch = opts.fetch ?? globalThis.fetch.bind(globalThis);
    this.sleep = opts.sleep ?? defaultSleep;
  }

  async send(pending: PendingUpload, so: SendOptions = {}): Promise<UploadResult> {
    if (this.opts.openRange && (pending.uploadUrl || pending.bytes >= (this.opts.resumableFromBytes ?? 64 * 1024 * 1024)))
      return this.sendResumable(pending, so);
    return this.withRetries(pending, so, async (attempt) => {
      const res = await this.post(pending, so);
      if (res.status === 202) return this.poll(pending, attempt + 1, so);
      if (isRetryableStatus(res.status)) throw new HttpStatus(res);
      const body = await res.json().catch(() => null);
      return { status: res.status, body, replayed: res.headers.get('idempotent-replayed') === 'true', attempts: attempt + 1 };
    });
  }

  /**
   * Runs `once` until it returns a final answer: a thrown error (network, timeout, or a
   * retryable status as HttpStatus) is retried after the backoff (Retry-After first), up to
   * maxAttempts; cancellation stops at once.
   */
  private async withRetries(
    pending: PendingUpload,
    so: SendOptions,
    once: (attempt: number) => Promise<UploadResult>,
  ): Promise<UploadResult> {
    const maxAttempts = this.opts.maxAttempts ?? Infinity;
    let last = 'not sent';
    for (let attempt = 0; attempt < maxAttempts; attempt++) {
      so.signal?.throwIfAborted();
      pending.attempts++;
      let retryAfter: string | null = null;
      try {
        return await once(attempt);
      } catch (err) {
        if (so.signal?.aborted) throw so.signal.reason;
        if (err instanceof HttpStatus) retryAfter = err.retryAfter;
        last = err instanceof HttpStatus ? err.message : err instanceof Error ? `${err.name}: ${err.message}` : String(err);
      }
      const delay = nextDelayMs(attempt, retryAfter, this.opts.backoff ?? DEFAULT_BACKOFF, this.opts.random);
      so.onAttempt?.(attempt + 1, last, delay);
      if (attempt + 1 < maxAttempts) await this.sleep(delay, so.signal);
    }
    throw new GaveUpError(maxAttempts, last);
  }

  private async post(pending: PendingUpload, so: SendOptions): Promise<Response> {
    let sent = 0;
    const body = await this.opts.openBody(pending, (n) => {
      sent += n;
      so.onProgress?.(sent, pending.bytes);
    });
    const headers: Record<string, string> = {
      authorization: `Bearer ${this.opts.token}`,
      'idempotency-key': pending.idempotencyKey,
      'content-type': pending.contentType,
      'content-length': String(pending.bytes),
      'x-file-sha256': pending.sha256,
      prefer: `wait=${this.opts.waitSeconds ?? 30}`,
    };
    if (pending.fileName) headers['x-file-name'] = encodeURIComponent(pending.fileName);
    const signals = [so.signal, this.opts.attemptTimeoutMs ? AbortSignal.timeout(this.opts.attemptTimeoutMs) : undefined].filter(
      Boolean,
    ) as AbortSignal[];
    return this.fetch(`${this.opts.baseUrl}/v1/uploads`, {
      method: 'POST',
      headers,
      body,
      signal: signals.length ? AbortSignal.any(signals) : undefined,
      // Node's fetch needs this for a streamed request body; browsers ignore it.
      duplex: 'half',
    } as RequestInit);
  }

  /**
   * tus: create the key's session once (its URL is persisted through `onUploadUrl`), then on
   * every attempt ask the server's offset (HEAD) and send only the rest, a PATCH per chunk.
   * The last PATCH answers after the commit; the key's stored answer is the result.
   */
  private async sendResumable(pending: PendingUpload, so: SendOptions): Promise<UploadResult> {
    const chunk = this.opts.resumableChunkBytes ?? 16 * 1024 * 1024;
    const tus = { authorization: `Bearer ${this.opts.token}`, 'tus-resumable': '1.0.0' };
    return this.withRetries(pending, so, async (attempt) => {
      if (!pending.uploadUrl) {
        const metadata = [['filetype', pending.contentType], ...(pending.fileName ? [['filename', pending.fileName]] : [])]
          .map(([k, v]) => `${k} ${base64(v!)}`)
          .join(',');
        const res = await this.fetch(`${this.opts.baseUrl}/v1/tus`, {
          method: 'POST',
          headers: {
            ...tus,
            'idempotency-key': pending.idempotencyKey,
            'upload-length': String(pending.bytes),
            'upload-metadata': metadata,
            'x-file-sha256': pending.sha256,
          },
          signal: so.signal,
        });
        if (res.status !== 201) {
          if (!isRetryableStatus(res.status))
            return { status: res.status, body: await res.json().catch(() => null), replayed: false, attempts: attempt + 1 };
          throw new HttpStatus(res);
        }
        pending.uploadUrl = new URL(res.headers.get('location')!, `${this.opts.baseUrl}/`).href;
        await so.onUploadUrl?.(pending);
      }
      const head = await this.fetch(pending.uploadUrl, { method: 'HEAD', headers: tus, signal: so.signal });
      if (head.status === 404) {
        // The session expired or was terminated: its key is free, so a new one is made.
        pending.uploadUrl = null;
        throw new Error('upload session gone');
      }
      if (head.status !== 200) throw new HttpStatus(head);
      let offset = Number(head.headers.get('upload-offset'));
      so.onProgress?.(offset, pending.bytes);
      for (;;) {
        const end = Math.min(offset + chunk, pending.bytes);
        let sent = offset;
        const body = await this.opts.openRange!(pending, offset, end, (n) => so.onProgress?.((sent += n), pending.bytes));
        const signals = [so.signal, this.opts.attemptTimeoutMs ? AbortSignal.timeout(this.opts.attemptTimeoutMs) : undefined].filter(
          Boolean,
        ) as AbortSignal[];
        const res = await this.fetch(pending.uploadUrl, {
          method: 'PATCH',
          headers: {
            ...tus,
            'content-type': 'application/offset+octet-stream',
            'upload-offset': String(offset),
            prefer: `wait=${this.opts.waitSeconds ?? 30}`,
          },
          body,
          signal: signals.length ? AbortSignal.any(signals) : undefined,
          duplex: 'half',
        } as RequestInit);
        if (res.status === 204) {
          offset = Number(res.headers.get('upload-offset'));
          if (offset < pending.bytes) continue;
          return { ...(await this.poll(pending, attempt + 1, so)), replayed: false };
        }
        // 423 (another PATCH still holds the upload, e.g. the one a dropped connection left)
        // and 460 are retried from a fresh HEAD; a recorded rejection (415) or a whole-file
        // checksum mismatch is final.
        if (!isRetryableStatus(res.status) && res.status !== 423 && res.status !== 460)
          return { status: res.status, body: await res.json().catch(() => null), replayed: false, attempts: attempt + 1 };
        throw new HttpStatus(res);
      }
    });
  }

  /** After a 202: poll the key until the stored answer is there. */
  private async poll(pending: PendingUpload, attempts: number, so: SendOptions): Promise<UploadResult> {
    for (let i = 0; ; i++) {
      so.signal?.throwIfAborted();
      let retryAfter: string | null = null;
      try {
        const res = await this.fetch(`${this.opts.baseUrl}/v1/idempotency-keys/${encodeURIComponent(pending.idempotencyKey)}`, {
          headers: { authorization: `Bearer ${this.opts.token}` },
          signal: so.signal,
        });
        const json = (await res.json().catch(() => null)) as { state?: string; status?: number; response?: unknown } | null;
        if (res.ok && json?.state === 'completed') return { status: json.status!, body: json.response, replayed: true, attempts };
        retryAfter = res.headers.get('retry-after');
      } catch {
        // A lost poll is retried like any other; only cancellation stops it.
        if (so.signal?.aborted) throw so.signal.reason;
      }
      await this.sleep(nextDelayMs(Math.min(i, 4), retryAfter, this.opts.backoff ?? DEFAULT_BACKOFF, this.opts.random), so.signal);
    }
  }
}

/** A retryable answer, carried to the backoff with its Retry-After. */
class HttpStatus extends Error {
  readonly retryAfter: string | null;
  constructor(res: Response) {
    super(`HTTP ${res.status}`);
    this.name = 'HttpStatus';
    this.retryAfter = res.headers.get('retry-after');
    void res.body?.cancel().catch(() => {}); // the status is the answer; the body is only released
  }
}

/** UTF-8 → base64 on every platform (tus metadata values). */
function base64(text: string): string {
  let binary = '';
  for (const b of new TextEncoder().encode(text)) binary += String.fromCharCode(b);
  return btoa(binary);
}
