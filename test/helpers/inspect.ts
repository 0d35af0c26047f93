// Reads what a test stack actually stored: rows per key and objects per prefix.
import type { PayloadCodec } from '@temporalio/common';
import { isSealed } from '../../src/codec/payload-codec';
import { payloadsIn } from '../../src/codec/payloads-in';
import type { Pool } from '../../src/db/pool';
import type { ObjectStore } from '../../src/storage/store';

export async function rowsForKey(pool: Pool, tenantId: string, key: string) {
  const uploads = await pool.query('SELECT * FROM uploads WHERE tenant_id = $1 AND idempotency_key = $2', [tenantId, key]);
  const keys = await pool.query('SELECT * FROM idempotency_keys WHERE tenant_id = $1 AND key = $2', [tenantId, key]);
  return { uploads: uploads.rows, keys: keys.rows };
}

export async function totals(pool: Pool, store: ObjectStore) {
  const r = await pool.query<{ uploads: string; keys: string }>(
    'SELECT (SELECT count(*) FROM uploads) AS uploads, (SELECT count(*) FROM idempotency_keys) AS keys',
  );
  return { uploads: Number(r.rows[0]!.uploads), keys: Number(r.rows[0]!.keys), objects: (await listKeys(store, 'tenants/')).length };
}

export async function listKeys(store: ObjectStore, prefix: string): Promise<string[]> {
  const out: string[] = [];
  for await (const o of store.list(prefix)) out.push(o.key);
  return out;
}

export async function readObject(store: ObjectStore, key: string): Promise<Buffer> {
  const stream = await store.get(key);
  if (!stream) throw new Error(`no object ${key}`);
  const chunks: Buffer[] = [];
  for await (const c of stream) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

/** Polls until `fn` returns a truthy value (deterministic waits, generous bounds). */
export async function eventually<T>(fn: () => Promise<T | undefined | false>, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      const v = await fn();
      if (v) return v;
    } catch (err) {
      last = err;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`condition not met within ${timeoutMs} ms${last ? `: ${String(last)}` : ''}`);
}

/**
 * Whether a run's commit is retrying on a timer with nothing committed: its local activity
 * failed past the local retry threshold (a timer started) and no commit marker holds a result.
 */
export function commitRetrying(
  events: {
    markerRecordedEventAttributes?: { details?: Record<string, { payloads?: { data?: Uint8Array | null }[] | null }> | null } | null;
    timerStartedEventAttributes?: unknown;
  }[],
): boolean {
  const activity = (e: (typeof events)[number]) => {
    const data = e.markerRecordedEventAttributes?.details?.data?.payloads?.[0]?.data;
    return data ? (JSON.parse(Buffer.from(data).toString()) as { activity_type: string }).activity_type : undefined;
  };
  const committed = events.some((e) => activity(e) === 'commitUpload' && e.markerRecordedEventAttributes?.details?.result);
  return !committed && events.some((e) => e.timerStartedEventAttributes);
}

/** Every byte array in a value (a workflow history's payloads), to look for what must not be there in clear. */
export function bytesIn(value: unknown, out: Buffer[] = []): Buffer[] {
  if (value instanceof Uint8Array) out.push(Buffer.from(value));
  else if (value && typeof value === 'object') for (const v of Object.values(value)) bytesIn(v, out);
  return out;
}

/**
 * A history with its sealed payloads opened by the stack's codec (in place), for a test that
 * reads what a run recorded; the raw history (fetchHistory) holds only ciphertext.
 */
export async function openHistory<T>(history: T, codec: PayloadCodec | undefined): Promise<T> {
  if (!codec) return history;
  const sealed = payloadsIn(history).filter(isSealed);
  const opened = await codec.decode(sealed);
  sealed.forEach((p, i) => {
    p.metadata = opened[i]!.metadata;
    p.data = opened[i]!.data;
  });
  return history;
}

/** The pool seen through a wrapper that records the text of every statement made through it. */
export function countingPool(pool: Pool): { pool: Pool; statements: string[] } {
  const statements: string[] = [];
  const counted = {
    query: (...args: Parameters<Pool['query']>) => {
      const first = args[0] as string | { text: string };
      statements.push(typeof first === 'string' ? first : first.text);
      return (pool.query as (...a: unknown[]) => unknown)(...args);
    },
  } as unknown as Pool;
  return { pool: counted, statements };
}
