// The end of a chaos run: wait until nothing is moving, sweep staging, then check every
// invariant — the project's audit over Postgres and S3, plus what only the clients know
// (what was acknowledged, with which bytes, and every answer they got per key) and what
// only the webhook receiver and Temporal know (event ids seen, executions per key).
import { setTimeout as sleep } from 'node:timers/promises';
import { Client, Connection } from '@temporalio/client';
import { audit } from '../src/audit';
import { allRenditions, allUploads } from '../src/db/queries/audit';
import type { WebhookReceiver } from '../test/support/webhook-receiver';
import { eventId, type EventType } from '../src/downstream/events';
import { ERASED_MARKER, isSealed, isStepLabel, PayloadKeyring, SealingCodec } from '../src/codec/payload-codec';
import { payloadsIn } from '../src/codec/payloads-in';
import type { UploadRecord } from './load';
import type { ChaosStack } from './stack';

export interface Verdict {
  acknowledged: number;
  unanswered: number;
  answers: number;
  replayedAnswers: number;
  misuseRefused: number;
  /** Uploads deleted (erased) and events redelivered by the clients. */
  deleted: number;
  redelivered: number;
  webhookDeliveries: number;
  stagingRemoved: number;
  /** Runs of erased uploads read raw from Temporal: sealed, and none of their payloads opens. */
  erasedRunsChecked: number;
  duplicates: string[];
  losses: string[];
  other: string[];
}

const EVENTS: EventType[] = ['upload.completed', 'upload.processed'];

/** Whether the client deleted the upload (its DELETE answered). */
const isDeleted = (r: UploadRecord) => r.removed === 'deleted' || r.removed === 'deleting';

/**
 * The events an upload must have produced. A deleted one must announce its deletion; its
 * earlier events may have been cut short by the tombstone (nothing but upload.deleted is
 * sent after it), so for them only "at most one id" holds.
 */
const eventsOf = (r: UploadRecord): EventType[] => (isDeleted(r) ? ['upload.deleted'] : EVENTS);

async function until(timeoutMs: number, probe: () => Promise<boolean>): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await probe().catch(() => false)) return true;
    await sleep(500);
  }
  return false;
}

function uploadIdOf(a: { status: number; body: string }): string | undefined {
  if (a.status !== 201) return undefined;
  return (JSON.parse(a.body) as { uploadId?: string }).uploadId;
}

export async function settleAndVerify(opts: {
  stack: ChaosStack;
  tenantId: string;
  token: string;
  records: UploadRecord[];
  receiver: WebhookReceiver;
  quiesceMs: number;
  log: (line: string) => void;
}): Promise<Verdict> {
  const { stack, records, receiver, log } = opts;
  const v: Verdict = {
    acknowledged: 0,
    unanswered: 0,
    answers: 0,
    replayedAnswers: 0,
    misuseRefused: 0,
    webhookDeliveries: 0,
    stagingRemoved: 0,
    erasedRunsChecked: 0,
    deleted: records.filter(isDeleted).length,
    redelivered: records.filter((r) => r.redelivered !== undefined && !r.redelivered.startsWith('failed')).length,
    duplicates: [],
    losses: [],
    other: [],
  };
  const acked = new Map<string, { record: UploadRecord; uploadId: string }>();
  for (const r of records) {
    v.answers += r.answers.length;
    v.replayedAnswers += r.answers.filter((a) => a.replayed).length;
    if (r.unanswered.length) v.unanswered++;
    const distinct = new Set(r.answers.map((a) => `${a.status} ${a.body}`));
    if (distinct.size > 1)
      v.duplicates.push(`key ${r.plan.key}: ${distinct.size} different answers: ${[...distinct].map((d) => d.slice(0, 120)).join(' | ')}`);
    for (const a of r.answers) if (a.status !== 201) v.other.push(`key ${r.plan.key}: ${a.sender} got ${a.status} ${a.body.slice(0, 200)}`);
    if (r.misuse) {
      if (r.misuse.status === 422) v.misuseRefused++;
      else v.other.push(`key ${r.plan.key}: reuse with other bytes got ${r.misuse.status}, expected 422`);
    }
    const uploadId = r.answers.map(uploadIdOf).find(Boolean);
    if (uploadId) acked.set(r.plan.key, { record: r, uploadId });
    if (r.removed?.startsWith('failed')) v.other.push(`key ${r.plan.key}: the delete gave up: ${r.removed.slice(0, 200)}`);
    if (r.redelivered?.startsWith('failed')) v.other.push(`key ${r.plan.key}: the redelivery gave up: ${r.redelivered.slice(0, 200)}`);
  }
  v.acknowledged = acked.size;

  log(`settling: ${acked.size} acknowledged uploads to reach "processed", then no running workflows`);
  // Every round asks about every upload still pending (16 at a time), so one slow upload
  // never hides how far the rest have got.
  const pending = new Set(acked.values());
  let lastLog = Date.now();
  await until(opts.quiesceMs, async () => {
    const batch = [...pending];
    for (let i = 0; i < batch.length; i += 16) {
      await Promise.all(
        batch.slice(i, i + 16).map(async (a) => {
          const res = await fetch(`${stack.directApiUrl}/v1/uploads/${a.uploadId}`, { headers: { authorization: `Bearer ${opts.token}` } });
          const u = res.ok ? ((await res.json()) as { status: string; erasedAt: string | null }) : undefined;
          // A deleted upload is settled once erased; the others once processed.
          if (u && (isDeleted(a.record) ? u.erasedAt !== null : u.status === 'processed')) pending.delete(a);
        }),
      );
    }
    if (Date.now() - lastLog > 30_000) {
      lastLog = Date.now();
      log(`settling: ${pending.size} uploads not yet "processed"`);
    }
    return pending.size === 0;
  });
  const connection = await Connection.connect({ address: stack.temporalAddress });
  // The services seal every payload: the verifier reads results through the same codec.
  const temporal = new Client({
    connection,
    dataConverter: { payloadCodecs: [new SealingCodec(new PayloadKeyring(stack.pool, stack.box))] },
  });
  try {
    // Explained for the first 50 only: past that the pattern is clear and describe() is slow.
    let explained = 0;
    const whyShort = async (uploadId: string) => (explained++ < 50 ? explainDownstream(temporal, uploadId) : 'not described');
    for (const a of pending)
      v.other.push(`upload ${a.uploadId} (key ${a.record.plan.key}) never reached "processed": ${await whyShort(a.uploadId)}`);

    const quiet = await until(
      opts.quiesceMs,
      async () => (await temporal.workflow.count('ExecutionStatus="Running" AND WorkflowType!="housekeepingWorkflow"')).count === 0,
    );
    if (!quiet) {
      const running: string[] = [];
      for await (const w of temporal.workflow.list({
        query: 'ExecutionStatus="Running" AND WorkflowType!="housekeepingWorkflow"',
        pageSize: 20,
      })) {
        running.push(w.workflowId);
        if (running.length >= 20) break;
      }
      v.other.push(`workflows still running after the settle period: ${running.join(', ')}`);
    }

    // Executions per key: at most one completed upload run and one downstream run per upload.
    const completed = new Map<string, number>();
    for await (const w of temporal.workflow.list({ query: 'ExecutionStatus="Completed"' })) {
      if (w.type === 'housekeepingWorkflow') continue;
      completed.set(w.workflowId, (completed.get(w.workflowId) ?? 0) + 1);
    }
    for (const [id, n] of completed) if (n > 1) v.duplicates.push(`workflow ${id} completed ${n} times`);

    // Staging: a worker whose grace is zero sweeps attempt objects no upload references.
    await stack.restartWorkerForSweep();
    const sweep = await temporal.workflow.execute('housekeepingWorkflow', {
      args: ['sweep-staging'],
      taskQueue: stack.taskQueue,
      workflowId: `chaos-final-sweep-${Date.now()}`,
      workflowExecutionTimeout: '5 minutes',
    });
    v.stagingRemoved = (sweep as { removed: number }).removed;

    log('auditing Postgres and S3');
    const report = await audit(stack.pool, stack.store);
    for (const line of report.violations)
      (line.startsWith('duplicate') ? v.duplicates : line.startsWith('loss') ? v.losses : v.other).push(line);
    if (report.unreferencedObjects > 0) v.other.push(`${report.unreferencedObjects} objects left in staging after the sweep`);

    const rows = new Map<string, { id: string; sha256: string }>();
    for await (const u of allUploads(stack.pool)) {
      if (u.tenant_id !== opts.tenantId) continue;
      rows.set(u.idempotency_key, { id: u.id, sha256: u.sha256 });
    }
    const planned = new Set(records.map((r) => r.plan.key));
    for (const key of rows.keys()) if (!planned.has(key)) v.duplicates.push(`upload row for key ${key} that no client sent`);
    const renditions = new Map<string, number>();
    for (const r of await allRenditions(stack.pool)) renditions.set(r.upload_id, (renditions.get(r.upload_id) ?? 0) + 1);

    const seen = () => new Set(receiver.received.map((w) => `${w.json.data?.uploadId} ${w.json.type}`));
    await until(opts.quiesceMs, async () => {
      const got = seen();
      return [...acked.values()].every((a) => eventsOf(a.record).every((t) => got.has(`${a.uploadId} ${t}`)));
    });
    v.webhookDeliveries = receiver.received.length;
    const idsByUpload = new Map<string, Set<string>>();
    for (const w of receiver.received) {
      const k = `${w.json.data?.uploadId} ${w.json.type}`;
      if (!idsByUpload.has(k)) idsByUpload.set(k, new Set());
      idsByUpload.get(k)!.add(w.id);
      if (!w.verified) v.other.push(`webhook ${w.id}: signature did not verify`);
    }

    // An erased upload's runs, read raw from Temporal: every payload sealed, none opens.
    const erasedCheck = new SealingCodec(new PayloadKeyring(stack.pool, stack.box, 0));
    for (const { record, uploadId } of acked.values()) {
      if (!isDeleted(record)) continue;
      const runs = (await stack.pool.query<{ workflow_id: string | null }>('SELECT workflow_id FROM uploads WHERE id = $1', [uploadId]))
        .rows;
      for (const workflowId of [runs[0]?.workflow_id, `downstream/${uploadId}`]) {
        if (!workflowId) continue;
        const history = await temporal.workflow
          .getHandle(workflowId)
          .fetchHistory()
          .catch(() => undefined);
        if (!history) continue;
        const payloads = payloadsIn(history);
        if (payloads.some((p) => !isSealed(p) && !isStepLabel(p)))
          v.other.push(`erased upload ${uploadId}: run ${workflowId} holds a payload in clear`);
        const opened = await erasedCheck.decode(payloads.filter(isSealed));
        if (opened.some((p) => Buffer.from(p.data ?? new Uint8Array()).toString() !== JSON.stringify(ERASED_MARKER)))
          v.other.push(`erased upload ${uploadId}: a payload of run ${workflowId} still opens`);
        v.erasedRunsChecked++;
      }
    }

    for (const [key, { record, uploadId }] of acked) {
      const row = rows.get(key);
      if (!row) v.losses.push(`key ${key}: acknowledged upload ${uploadId} has no upload row`);
      else if (row.id !== uploadId) v.duplicates.push(`key ${key}: acknowledged upload ${uploadId} but the row is ${row.id}`);
      else if (row.sha256 !== record.sha256)
        v.losses.push(`key ${key}: stored SHA-256 ${row.sha256} differs from the client's ${record.sha256}`);
      for (const t of [...EVENTS, 'upload.deleted'] as EventType[]) {
        const ids = idsByUpload.get(`${uploadId} ${t}`) ?? new Set();
        if (ids.size === 0 && eventsOf(record).includes(t))
          v.losses.push(`upload ${uploadId}: no ${t} webhook received (${await whyShort(uploadId)})`);
        if (ids.size > 1) v.duplicates.push(`upload ${uploadId}: ${ids.size} distinct webhook ids for ${t}`);
        for (const id of ids)
          if (id !== eventId(uploadId, t)) v.duplicates.push(`upload ${uploadId}: webhook id ${id} is not the event's id`);
      }
      const expected = record.plan.contentType === 'image/png' && !isDeleted(record) ? 2 : 0;
      const got = renditions.get(uploadId) ?? 0;
      if (got !== expected)
        (got > expected ? v.duplicates : v.losses).push(
          `upload ${uploadId}: ${got} renditions, expected ${expected} (${await whyShort(uploadId)})`,
        );
    }
    return v;
  } finally {
    await connection.close();
  }
}

/** What the upload's downstream run is doing, for a violation line a human can trace. */
async function explainDownstream(temporal: Client, uploadId: string): Promise<string> {
  try {
    const d = await temporal.workflow.getHandle(`downstream/${uploadId}`).describe();
    const raw = d.raw.pendingActivities ?? [];
    const acts = raw.map(
      (p) => `${p.activityType?.name} attempt ${p.attempt}${p.lastFailure?.message ? ` (${p.lastFailure.message.slice(0, 80)})` : ''}`,
    );
    return `downstream run ${d.status.name}, ${d.historyLength} events${acts.length ? `, pending: ${acts.join('; ')}` : ''}`;
  } catch (err) {
    return `no downstream run (${err instanceof Error ? err.message.slice(0, 100) : String(err)})`;
  }
}
