// What one upload costs Temporal, read from the histories (#25): events and workflow tasks
// of the upload run and of its downstream child, for an upload with nothing downstream (a
// type nothing transcodes, no webhook endpoint), one with a transcode, and one that also
// has a webhook endpoint to notify. Counted from one upload of each: the histories are
// deterministic for a given path, so one is the figure. Also their bytes as Temporal keeps
// them, and what the upload run's start event carries (search attributes, memo, input).
import http from 'node:http';
import { randomUUID } from 'node:crypto';
import { Client, Connection } from '@temporalio/client';
import proto from '@temporalio/proto';
import { createPool } from '../src/db/pool';
import { createTenant } from '../src/tenants';
import { uploadWorkflowId } from '../src/temporal/ids';

import { startOncelyProcess, type BenchServices } from './lib/services';
import { workflowIds } from '../src/temporal/names';

const PNG_1X1 = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==', 'base64');

const { History, WorkflowExecutionStartedEventAttributes: Started } = proto.temporal.api.history.v1;
type StartedProps = proto.temporal.api.history.v1.IWorkflowExecutionStartedEventAttributes;

interface RunCost {
  events: number;
  workflowTasks: number;
  /** The history as Temporal stores it (protobuf bytes), and what its start event carries. */
  historyBytes: number;
  start: { searchAttributes: number; memo: number; input: number; all: number };
}

/** Events, completed workflow tasks and bytes of a closed run (zeros when there is no such run). */
async function cost(client: Client, workflowId: string): Promise<RunCost> {
  try {
    const handle = client.workflow.getHandle(workflowId);
    await handle.result().catch(() => undefined);
    const history = await handle.fetchHistory();
    const events = history.events ?? [];
    const started = events[0]?.workflowExecutionStartedEventAttributes ?? {};
    const bytes = (attrs: StartedProps) => Started.encode(attrs).finish().length;
    return {
      events: events.length,
      workflowTasks: events.filter((e) => e.workflowTaskCompletedEventAttributes).length,
      historyBytes: History.encode(history).finish().length,
      start: {
        searchAttributes: bytes({ searchAttributes: started.searchAttributes }),
        memo: bytes({ memo: started.memo }),
        input: bytes({ input: started.input }),
        all: bytes(started),
      },
    };
  } catch {
    return { events: 0, workflowTasks: 0, historyBytes: 0, start: { searchAttributes: 0, memo: 0, input: 0, all: 0 } };
  }
}

export async function historyCost(services: BenchServices) {
  // The receiver is on loopback: allowed for this run.
  const env = { WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true' };
  const api = await startOncelyProcess(services, 'api', env);
  const worker = await startOncelyProcess(services, 'worker', env);
  const pool = createPool(services.databaseUrl, 1);
  const client = new Client({ connection: await Connection.connect({ address: services.temporalAddress }) });
  const receiver = http.createServer((_req, res) => res.end('ok'));
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  try {
    const quiet = await createTenant(pool, 'history-quiet');
    const notified = await createTenant(pool, 'history-notified');
    const port = (receiver.address() as { port: number }).port;
    const endpoint = await fetch(`${api.url}/v1/webhook-endpoints`, {
      method: 'POST',
      headers: { authorization: `Bearer ${notified.apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ url: `http://127.0.0.1:${port}/hook` }),
    });
    if (endpoint.status !== 201) throw new Error(`webhook endpoint answered ${endpoint.status}`);
    const cases = [
      { kind: 'idle', tenant: quiet, body: Buffer.from('plain text'), type: 'text/plain' },
      { kind: 'transcode', tenant: quiet, body: PNG_1X1, type: 'image/png' },
      { kind: 'transcodeAndWebhook', tenant: notified, body: PNG_1X1, type: 'image/png' },
    ];
    const out: Record<string, string | number> = {
      scenario: 'history: events / workflow tasks / bytes per upload (upload run + downstream child)',
      cases: 'idle = text, no endpoint; transcode = PNG, no endpoint; transcodeAndWebhook = PNG with an endpoint',
    };
    for (const c of cases) {
      const key = `bench-history-${randomUUID()}`;
      const res = await fetch(`${api.url}/v1/uploads`, {
        method: 'POST',
        headers: { authorization: `Bearer ${c.tenant.apiKey}`, 'idempotency-key': key, 'content-type': c.type },
        body: c.body,
      });
      const answer = (await res.json()) as { uploadId: string };
      if (res.status !== 201) throw new Error(`upload answered ${res.status}`);
      const upload = await cost(client, uploadWorkflowId(c.tenant.tenantId, key));
      const child = await cost(client, workflowIds.downstream(answer.uploadId));
      out[`${c.kind}Events`] = `${upload.events} + ${child.events} = ${upload.events + child.events}`;
      out[`${c.kind}WorkflowTasks`] = `${upload.workflowTasks} + ${child.workflowTasks} = ${upload.workflowTasks + child.workflowTasks}`;
      out[`${c.kind}HistoryBytes`] = `${upload.historyBytes} + ${child.historyBytes}`;
      // What each start writes (the upload run's): search attributes, memo and input, of the start event's bytes.
      if (c.kind === 'idle') out.uploadStartBytes = JSON.stringify(upload.start);
    }
    return out;
  } finally {
    receiver.close();
    await client.connection.close();
    await pool.end();
    await api.proc.stop();
    await worker.proc.stop();
  }
}
