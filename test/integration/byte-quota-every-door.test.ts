// Byte quotas at full size, through every door at once, with an API and the worker SIGKILLed
// mid-way: 50 uploads of 10 MiB against a 200 MiB quota (raw, form, RUFH, tus, direct, Uppy,
// import), half through an API process that is killed and started again, every client
// sending again under its key until it has a final answer. Exactly the quota is committed and
// never more; each refused key has no row and nothing stored; no reservation is left once
// every client is answered; usage and the audit agree. On the S3 store and the embedded one.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { audit } from '../../src/audit';
import type { ManagedProcess } from '../../src/devstack/process';
import { keyStoragePrefix } from '../../src/temporal/ids';
import { scheduleId } from '../../src/temporal/schedules';
import { startApiProcess } from '../helpers/api-process';
import { sha256 } from '../helpers/http';
import { eventually, listKeys } from '../helpers/inspect';
import { exchange, type FinalAnswer } from '../helpers/rufh';
import { stackEnv, type TestStack } from '../helpers/stack';
import { stackWithWorkerProcess } from '../helpers/worker-process';
import { serveOnLoopback, type LoopbackServer } from '../support/loopback';
import { serverPort } from '../support/ports';

const MiB = 1024 * 1024;
const SIZE = 10 * MiB;
const QUOTA = 200 * MiB;
const UPLOADS = 50;
const DOORS = ['raw', 'form', 'rufh', 'tus', 'direct', 'uppy', 'import'] as const;
type Door = (typeof DOORS)[number];
/** A client's answers that end its upload; anything else (a cut, 202, 409, 423, 429, 5xx) is asked again. */
const FINAL = new Set([201, 413]);

interface Plan {
  index: number;
  door: Door;
  key: string;
  body: Buffer;
  /** The API this client talks to: the killed process's, or the in-process one's. */
  base: string;
}

describe.each(['s3', 'local'] as const)('byte quotas through every door under SIGKILL on the %s store', (kind) => {
  let harness: Awaited<ReturnType<typeof stackWithWorkerProcess>>;
  let stack: TestStack;
  let api: ManagedProcess | undefined;
  let origin: LoopbackServer | undefined;
  let dataDir: string | undefined;

  beforeAll(async () => {
    dataDir = kind === 'local' ? mkdtempSync(path.join(os.tmpdir(), 'oncely-quota-doors-')) : undefined;
    // Attempt objects a killed API left behind are housekeeping's once this old (swept below).
    const storeEnv: Record<string, string> = { STAGING_GRACE_SECONDS: '5', ...(dataDir ? { S3_ENDPOINT: '', DATA_DIR: dataDir } : {}) };
    harness = await stackWithWorkerProcess(`quota_doors_${kind}`, storeEnv);
    stack = harness.stack;
  });
  afterAll(async () => {
    await api?.stop('SIGKILL');
    await origin?.close();
    await harness?.stop();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  it('commits exactly the quota and never more, refuses the rest before keeping anything, and leaves no reservation', async () => {
    const port = await serverPort();
    const killable = `http://127.0.0.1:${port}`;
    const apiEnv = {
      ...stackEnv(stack.name, stack.dbUrl),
      S3_BUCKET: stack.config.S3_BUCKET,
      STAGING_GRACE_SECONDS: '5',
      ...(dataDir ? { S3_ENDPOINT: '', DATA_DIR: dataDir } : {}),
    };
    const logFile = (n: number) => path.join(inject('stack').tmpDir, `${stack.name}-api-${n}.log`);
    api = await startApiProcess(apiEnv, port, logFile(1));
    const t = await stack.createTenant('quota-every-door');
    await stack.runtime.pool.query('UPDATE tenants SET max_stored_bytes = $2 WHERE id = $1', [t.tenantId, QUOTA]);
    const auth = { authorization: `Bearer ${t.apiKey}` };

    const plans: Plan[] = Array.from({ length: UPLOADS }, (_, index) => ({
      index,
      door: DOORS[index % DOORS.length]!,
      key: `quota-door-${kind}-${String(index).padStart(4, '0')}`,
      body: randomBytes(SIZE),
      base: index % 2 === 0 ? killable : stack.url,
    }));
    // Imports read their file from here, slowly enough to be in flight when the processes die.
    origin = await serveOnLoopback(async (req, res) => {
      const plan = plans[Number(/^\/files\/(\d+)$/.exec(req.url ?? '')?.[1] ?? -1)];
      if (!plan) return void res.writeHead(404).end();
      res.writeHead(200, { 'content-length': plan.body.length, 'content-type': 'application/octet-stream' });
      for (let at = 0; at < plan.body.length && !res.destroyed; at += MiB) {
        res.write(plan.body.subarray(at, at + MiB));
        await sleep(30);
      }
      res.end();
    });
    const endpoint = (await (await fetch(`${stack.url}/v1/uppy-endpoints`, { method: 'POST', headers: auth })).json()) as {
      companionEndpoint: string;
    };

    /** One request over its own socket, the body written a MiB at a time; undefined when it was cut. */
    async function send(url: string, method: string, headers: Record<string, string>, body?: Buffer): Promise<FinalAnswer | undefined> {
      const x = exchange(url, method, { ...headers, 'content-length': String(body?.length ?? 0) });
      // A refusal may come before the whole body: then nothing more is written.
      let answered = false;
      void x.response.then(() => (answered = true));
      for (let at = 0; body && at < body.length && !answered; at += MiB) {
        await Promise.race([x.write(body.subarray(at, at + MiB)), x.response]);
        await sleep(20);
      }
      if (!answered) x.end();
      const answer = await x.response;
      x.cut();
      return answer;
    }
    const json = (a: FinalAnswer | undefined) => a?.json as Record<string, any> | undefined;
    /** A multipart form of the fields and the file, as a browser sends it. */
    async function formOf(fields: Record<string, string>, body: Buffer): Promise<{ bytes: Buffer; type: string }> {
      const form = new FormData();
      for (const [k, v] of Object.entries(fields)) form.append(k, v);
      form.append('file', new Blob([body]), 'f.bin');
      const r = new Request('http://form', { method: 'POST', body: form });
      return { bytes: Buffer.from(await r.arrayBuffer()), type: r.headers.get('content-type')! };
    }

    /** One attempt of the plan's door; its answer, or undefined to try again. */
    async function attempt(p: Plan): Promise<FinalAnswer | undefined> {
      const upload = `${p.base}/v1/uploads`;
      const headers = { ...auth, 'idempotency-key': p.key };
      switch (p.door) {
        case 'raw':
          return send(upload, 'POST', { ...headers, 'content-type': 'application/octet-stream', 'x-file-sha256': sha256(p.body) }, p.body);
        case 'rufh': {
          const rufh = { 'upload-draft-interop-version': '8' };
          const created = await send(
            upload,
            'POST',
            { ...headers, ...rufh, 'upload-complete': '?1', 'content-type': 'application/octet-stream' },
            p.body,
          );
          // A creation sent again names the upload resource and its offset: the rest is appended there.
          if (created?.status !== 201 || created.headers['upload-complete'] !== '?0') return created;
          const offset = Number(created.headers['upload-offset']);
          return send(
            new URL(String(created.headers.location), p.base).toString(),
            'PATCH',
            { ...auth, ...rufh, 'upload-offset': String(offset), 'upload-complete': '?1', 'content-type': 'application/partial-upload' },
            p.body.subarray(offset),
          );
        }
        case 'form': {
          const form = await formOf({ idempotencyKey: p.key }, p.body);
          return send(upload, 'POST', { ...auth, 'content-type': form.type }, form.bytes);
        }
        case 'tus': {
          const tus = { ...headers, 'tus-resumable': '1.0.0' };
          const created = await send(`${p.base}/v1/tus`, 'POST', { ...tus, 'upload-length': String(SIZE) });
          if (created?.status !== 201) return created;
          const at = new URL(String(created.headers.location), p.base).toString();
          const head = await send(at, 'HEAD', tus);
          const offset = Number(head?.headers['upload-offset'] ?? NaN);
          if (!head || head.status !== 200 || !Number.isInteger(offset)) return undefined;
          // At the full offset the PATCH carries nothing and completes the upload (again): its answer is the commit's.
          const patched = await send(
            at,
            'PATCH',
            { ...tus, 'upload-offset': String(offset), 'content-type': 'application/offset+octet-stream' },
            p.body.subarray(offset),
          );
          return patched?.status === 204 ? keyAnswer(p) : patched;
        }
        case 'direct': {
          const plan = await send(
            `${p.base}/v1/direct-uploads`,
            'POST',
            { ...headers, 'content-type': 'application/json' },
            Buffer.from(JSON.stringify({ bytes: SIZE, sha256: sha256(p.body) })),
          );
          if (plan?.status !== 201) return plan;
          const session = json(plan)!;
          // Sent again: a session past its PUT names no URL (its completion answers), a committed one answers the upload.
          if (!session.upload && !session.state) return plan;
          if (session.upload) {
            const target = session.upload as { url: string; headers: Record<string, string> };
            const put = await send(new URL(target.url, p.base).toString(), 'PUT', target.headers, p.body);
            if (put?.status !== 200) return undefined;
          }
          return send(`${p.base}/v1/direct-uploads/${json(plan)!.id}/complete`, 'POST', auth);
        }
        case 'uppy': {
          const q = new URLSearchParams({ filename: 'u.bin', type: 'application/octet-stream', 'metadata[idempotencyKey]': p.key });
          const companion = new URL(new URL(endpoint.companionEndpoint, stack.url).pathname, p.base);
          const params = await send(`${companion}/s3/params?${q}`, 'GET', {});
          if (params?.status !== 200) return undefined;
          const { url, fields } = json(params) as { url: string; fields: Record<string, string> };
          const form = await formOf(fields, p.body);
          return send(new URL(url, p.base).toString(), 'POST', { 'content-type': form.type }, form.bytes);
        }
        case 'import':
          return send(
            `${p.base}/v1/imports`,
            'POST',
            { ...headers, 'content-type': 'application/json', prefer: 'wait=30' },
            Buffer.from(JSON.stringify({ url: `${origin!.base}/files/${p.index}` })),
          );
      }
    }
    /** How the key ended, once it has: its stored answer, or undefined while it is still being committed. */
    async function keyAnswer(p: Plan): Promise<FinalAnswer | undefined> {
      const res = await fetch(`${stack.url}/v1/idempotency-keys/${encodeURIComponent(p.key)}`, { headers: auth }).catch(() => undefined);
      const state = res?.status === 200 ? ((await res.json()) as { state: string; status?: number; response?: unknown }) : undefined;
      if (state?.state !== 'completed') return undefined;
      return { status: state.status!, headers: {}, text: JSON.stringify(state.response), json: state.response };
    }
    async function untilAnswered(p: Plan): Promise<{ plan: Plan; status: number; text: string }> {
      const deadline = Date.now() + 300_000;
      let last = 'no answer';
      while (Date.now() < deadline) {
        const a = await attempt(p).catch((err: unknown) => {
          last = String(err);
          return undefined;
        });
        if (a && FINAL.has(a.status)) return { plan: p, status: a.status, text: a.text };
        // A refusal of the request itself is not a fault to wait out: the test fails with it.
        if (a && a.status >= 400 && a.status < 500 && ![408, 409, 423, 425, 429].includes(a.status))
          return { plan: p, status: a.status, text: a.text };
        if (a) last = `${a.status} ${a.text.slice(0, 200)}`;
        await sleep(300);
      }
      return { plan: p, status: 0, text: last };
    }

    const answered = Promise.all(
      plans.map(async (p) => {
        await sleep(p.index * 40);
        return untilAnswered(p);
      }),
    );
    // Mid-way: some uploads committed, the rest in flight. Both processes die at once.
    const { pool } = stack.runtime;
    const committedRows = async () =>
      (await pool.query<{ n: number }>('SELECT count(*)::int AS n FROM uploads WHERE tenant_id = $1', [t.tenantId])).rows[0]!.n;
    await expect.poll(committedRows, { timeout: 120_000, interval: 100 }).toBeGreaterThanOrEqual(2);
    await Promise.all([api.stop('SIGKILL'), harness.kill()]);
    await sleep(1000);
    await Promise.all([(async () => (api = await startApiProcess(apiEnv, port, logFile(2))))(), harness.start()]);

    const results = await answered;
    const unanswered = results.filter((r) => !FINAL.has(r.status)).map((r) => `${r.plan.door} ${r.plan.key}: ${r.text}`);
    expect(unanswered).toEqual([]);
    const committed = new Set(
      (await pool.query<{ k: string }>('SELECT idempotency_key AS k FROM uploads WHERE tenant_id = $1', [t.tenantId])).rows.map((r) => r.k),
    );
    // Every client's answer beside what happened, for a failure's message.
    const outcomes = results
      .map((r) => `${r.plan.door} ${r.plan.key} ${r.status} ${committed.has(r.plan.key) ? 'committed' : '-'}`)
      .join('\n');
    // What the clients were told is what happened: a 201 for each committed key, a 413 for each other.
    for (const r of results)
      expect(committed.has(r.plan.key), `${r.plan.door} ${r.plan.key} answered ${r.status} ${r.text.slice(0, 300)}`).toBe(r.status === 201);
    expect(committed.size, outcomes).toBe(QUOTA / SIZE);
    // Every door had uploads refused and committed (seven doors, fifty uploads, twenty places).
    const refused = results.filter((r) => r.status === 413);
    expect(new Set(refused.map((r) => r.plan.door)).size, outcomes).toBeGreaterThanOrEqual(5);
    for (const r of refused)
      expect(JSON.parse(r.text), `${r.plan.door} ${r.plan.key}`).toMatchObject({ error: 'byte_quota_exceeded', quota: 'maxStoredBytes' });

    // Refused keys keep nothing: what a killed request staged is housekeeping's once past its
    // grace (the sweep triggered here until it has run past it, rather than awaited).
    const sweep = stack.temporal.schedule.getHandle(scheduleId(stack.config.TASK_QUEUE_UPLOADS, 'sweep-staging'));
    const leftovers = async () =>
      (await Promise.all(refused.map((r) => listKeys(stack.runtime.store, keyStoragePrefix(t.tenantId, r.plan.key))))).flat();
    await eventually(async () => {
      if ((await leftovers()).length === 0) return true;
      await sweep.trigger().catch(() => {});
      await sleep(3000);
      return false;
    }, 180_000).catch(() => {});
    expect(await leftovers()).toEqual([]);
    // No reservation outlives its answer; usage is the committed bytes.
    await expect
      .poll(async () => (await pool.query('SELECT 1 FROM quota_reservations WHERE tenant_id = $1', [t.tenantId])).rowCount, {
        timeout: 60_000,
        interval: 500,
      })
      .toBe(0);
    const standing = (await (await fetch(`${stack.url}/v1/quotas`, { headers: auth })).json()) as any;
    expect(standing.usage).toMatchObject({ storedBytes: QUOTA, uploadsThisMonth: QUOTA / SIZE, reservedBytes: 0, reservedUploads: 0 });
    expect(standing.remaining.storedBytes).toBe(0);
    expect((await audit(pool, stack.runtime.store)).violations).toEqual([]);
  }, 600_000);
});
