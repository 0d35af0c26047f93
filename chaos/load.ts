// The clients of a chaos run: the project's own UploadClient, one logical upload per key,
// paced across the fault window. Many uploads are sent by two or three concurrent copies
// under one key; some are sent again after their answer (must replay identically); a few
// reuse an answered key for other bytes (must be refused with 422 and change nothing);
// once processed, some are deleted (must be erased once) and some have an event redelivered
// (receivers must still see one webhook id per event), both through the faults. Some are
// imports instead: Oncely reads them from an origin the run serves (POST /v1/imports, each
// copy and resend the same request, until the key answers its 201).
import { createHash } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import sharp from 'sharp';
import { UploadClient } from '../src/client/upload-client';
import { LifecycleClient, OncelyApiError } from '../src/client/lifecycle-client';
import { eventId } from '../src/downstream/events';
import type { PendingUpload, UploadResult } from '../src/client/types';
import type { Rng } from './rng';
import { serveOnLoopback, type LoopbackServer } from '../test/support/loopback';

export interface UploadPlan {
  index: number;
  key: string;
  bytes: number;
  contentType: string;
  /** Concurrent copies of the first send. */
  copies: number;
  resend: boolean;
  misuse: boolean;
  /** Deleted once processed. */
  remove: boolean;
  /** upload.completed redelivered once processed. */
  redeliver: boolean;
  /** Sent as an import from the run's origin (POST /v1/imports), not as its bytes. */
  imported: boolean;
  /** Seed of the body's bytes (bodies are made when sent, not held for the whole run). */
  bodySeed: Rng;
}

export interface Answer {
  sender: string;
  status: number;
  body: string;
  replayed: boolean;
  attempts: number;
}

export interface UploadRecord {
  plan: UploadPlan;
  sha256: string;
  answers: Answer[];
  /** Senders that never got a final answer before the run's deadline. */
  unanswered: string[];
  misuse?: Answer;
  /** The DELETE's final answer (status `deleted` or `deleting`), or the error it gave up with. */
  removed?: string;
  /** The redelivery's outcome per endpoint, or the error it gave up with. */
  redelivered?: string;
}

export function planUploads(rng: Rng, n: number, runId: string): UploadPlan[] {
  return Array.from({ length: n }, (_, index) => {
    const image = rng.chance(0.1);
    const big = rng.chance(0.25);
    const copiesRoll = rng.int(0, 99);
    // Drawn from a stream of its own, so the other draws (and older seeds' plans) stay as they were.
    const imported = !image && rng.fork(10_000 + index).chance(0.1);
    return {
      index,
      key: `chaos-${runId}-upload-${String(index).padStart(5, '0')}`,
      bytes: image ? 0 : big ? rng.int(32 * 1024, 300 * 1024) : rng.int(1, 32 * 1024),
      contentType: image ? 'image/png' : 'application/octet-stream',
      copies: copiesRoll < 70 ? 1 : copiesRoll < 90 ? 2 : 3,
      resend: rng.chance(0.3),
      misuse: rng.chance(0.03) && !imported,
      imported,
      remove: rng.chance(0.15),
      redeliver: rng.chance(0.1),
      bodySeed: rng.fork(index + 1),
    };
  });
}

async function bodyOf(plan: UploadPlan, variant = 0): Promise<Buffer> {
  const rng = plan.bodySeed.fork(variant);
  if (plan.contentType !== 'image/png') return rng.bytes(plan.bytes || 1);
  // A small PNG of seeded noise: distinct per key, and it goes through the transcode step.
  const side = 48;
  return sharp(rng.bytes(side * side * 3), { raw: { width: side, height: side, channels: 3 } })
    .png()
    .toBuffer();
}

/** The origin imports read from: `/files/{index}` is that plan's body, made again for every read. */
export function startOrigin(plans: UploadPlan[]): Promise<LoopbackServer> {
  return serveOnLoopback((req, res) => {
    const plan = plans[Number(/^\/files\/(\d+)$/.exec(req.url ?? '')?.[1] ?? -1)];
    if (!plan) return void res.writeHead(404).end();
    void bodyOf(plan).then((body) => {
      res.writeHead(200, { 'content-length': body.length, etag: `"${plan.index}"`, 'content-type': plan.contentType });
      res.end(body);
    });
  });
}

export interface LoadOptions {
  /** API replicas: the copies and resends of one upload go to them in turn. */
  baseUrls: string[];
  token: string;
  /** Where imports read their files (startOrigin). */
  origin: string;
  concurrency: number;
  /** Upload i starts no earlier than i × spacingMs after the start. */
  spacingMs: number;
  signal: AbortSignal;
  onProgress?: (done: number) => void;
}

function sha256(b: Buffer): string {
  return createHash('sha256').update(b).digest('hex');
}

export async function driveUploads(plans: UploadPlan[], opts: LoadOptions): Promise<UploadRecord[]> {
  const clients = opts.baseUrls.map(
    (baseUrl) =>
      new UploadClient({
        baseUrl,
        token: opts.token,
        openBody: async (p) => bodies.get(p.id)!,
        backoff: { baseMs: 200, capMs: 3000 },
        attemptTimeoutMs: 30_000,
        waitSeconds: 20,
      }),
  );
  // A DELETE whose API was killed holds its key as "in progress" (409, Retry-After: 1) until
  // the claim is 60 s stale: the client's attempts must outlast that window.
  const lifecycle = opts.baseUrls.map((baseUrl) => new LifecycleClient({ baseUrl, token: opts.token, maxAttempts: 90 }));
  /** Each pending upload's bytes, by its id (a misuse send is its own pending upload). */
  const bodies = new Map<string, Buffer>();
  const records: UploadRecord[] = [];
  const started = Date.now();
  let next = 0;
  let done = 0;

  async function send(pending: PendingUpload, sender: string, record: UploadRecord, replica: number): Promise<Answer | undefined> {
    if (record.plan.imported) return importOnce(pending, sender, record, replica);
    try {
      const r: UploadResult = await clients[replica % clients.length]!.send({ ...pending, attempts: 0 }, { signal: opts.signal });
      return { sender, status: r.status, body: JSON.stringify(r.body), replayed: r.replayed, attempts: r.attempts };
    } catch {
      record.unanswered.push(sender);
      return undefined;
    }
  }

  /** The import of a plan's file under its key, asked again (the same request) until the key answers. */
  async function importOnce(pending: PendingUpload, sender: string, record: UploadRecord, replica: number): Promise<Answer | undefined> {
    const client = lifecycle[replica % lifecycle.length]!;
    const body = { url: `${opts.origin}/files/${record.plan.index}`, ...(pending.fileName ? { fileName: pending.fileName } : {}) };
    let attempts = 0;
    try {
      while (!opts.signal.aborted) {
        attempts++;
        const r = await client.importUrl(pending.idempotencyKey, body, { waitSeconds: 20 });
        if (r.status !== 202) return { sender, status: r.status, body: JSON.stringify(r.body), replayed: false, attempts };
      }
    } catch (err) {
      if (err instanceof OncelyApiError)
        return { sender, status: err.status, body: JSON.stringify(err.problem), replayed: false, attempts };
    }
    record.unanswered.push(sender);
    return undefined;
  }

  async function run(plan: UploadPlan): Promise<UploadRecord> {
    const body = await bodyOf(plan);
    const record: UploadRecord = { plan, sha256: sha256(body), answers: [], unanswered: [] };
    const pending: PendingUpload = {
      id: plan.key,
      idempotencyKey: plan.key,
      sha256: record.sha256,
      bytes: body.length,
      contentType: plan.contentType,
      fileName: `${plan.key}.${plan.contentType === 'image/png' ? 'png' : 'bin'}`,
      source: 'memory',
      createdAt: new Date().toISOString(),
      attempts: 0,
    };
    bodies.set(plan.key, body);
    // Copy i goes to replica i (mod the replicas), offset per upload so replica 0 is not always first.
    const first = await Promise.all(Array.from({ length: plan.copies }, (_, i) => send(pending, `copy-${i + 1}`, record, plan.index + i)));
    record.answers.push(...first.filter((a): a is Answer => a !== undefined));
    if (plan.resend && record.answers.length > 0) {
      const again = await send(pending, 'resend', record, plan.index + plan.copies);
      if (again) record.answers.push(again);
    }
    if (plan.misuse && record.answers.length > 0 && !opts.signal.aborted) {
      // Same key, other bytes: a client bug the server must refuse without a trace.
      const other = await bodyOf(plan, 1);
      const wrong: PendingUpload = { ...pending, id: `${plan.key}#misuse`, sha256: sha256(other), bytes: other.length };
      bodies.set(wrong.id, other);
      const r = await send(wrong, 'misuse', record, plan.index + plan.copies + 1);
      bodies.delete(wrong.id);
      if (r) record.misuse = r;
      else record.unanswered.pop(); // an unanswered misuse is not an unanswered upload
    }
    bodies.delete(plan.key);
    const uploadId = record.answers.map((a) => (JSON.parse(a.body) as { uploadId?: string }).uploadId).find(Boolean);
    if (uploadId && (plan.remove || plan.redeliver) && !opts.signal.aborted) await afterwards(plan, record, uploadId, plan.index);
    return record;
  }

  /** Once the upload is processed: its deletion, or a redelivery of its upload.completed event. */
  async function afterwards(plan: UploadPlan, record: UploadRecord, uploadId: string, replica: number): Promise<void> {
    const client = lifecycle[replica % lifecycle.length]!;
    try {
      for (let i = 0; i < 20 && !opts.signal.aborted; i++) {
        const u = await client.getUpload(uploadId, { waitSeconds: 10 });
        if (u.status === 'processed') break;
      }
      if (plan.redeliver) {
        // The event is in the log from its first delivery attempt on, which faults may delay.
        const id = eventId(uploadId, 'upload.completed');
        for (let i = 0; i < 60 && !opts.signal.aborted; i++) {
          const found = await client.getEvent(id).then(
            () => true,
            (err: unknown) => {
              if (err instanceof OncelyApiError && err.status === 404) return false;
              throw err;
            },
          );
          if (found) break;
          await sleep(1000);
        }
        const r = await client.redeliver(id, { waitSeconds: 20 });
        record.redelivered = JSON.stringify(r.outcomes ?? 'started');
      }
      if (plan.remove) record.removed = (await client.deleteUpload(uploadId, { waitSeconds: 20 })).status;
    } catch (err) {
      const message = `failed: ${err instanceof Error ? err.message : String(err)}`;
      if (plan.redeliver && record.redelivered === undefined) record.redelivered = message;
      if (plan.remove && record.removed === undefined) record.removed = message;
    }
  }

  async function lane(): Promise<void> {
    while (next < plans.length && !opts.signal.aborted) {
      const plan = plans[next++]!;
      const due = started + plan.index * opts.spacingMs;
      if (due > Date.now()) await sleep(due - Date.now());
      records.push(await run(plan));
      opts.onProgress?.(++done);
    }
  }
  await Promise.all(Array.from({ length: opts.concurrency }, lane));
  return records;
}
