// An upload's outcome as the HTTP answer every arrival mode gives: the stored answer
// (201 with Location, or a recorded rejection), replays marked Idempotent-Replayed, or 202
// with the key to poll while the commit outlives the wait.
import type { Context } from 'hono';
import type { UploadOutcome } from '../upload/receive';
import type { AppEnv } from './env';
import { REPLAY_HEADERS } from './replay-headers';

export function renderOutcome(c: Context<AppEnv>, outcome: UploadOutcome, key: string, closeConnection: boolean): Response {
  // One plain header object (CORS included): no Headers instance, no copying.
  const headers: Record<string, string> = { ...c.get('corsHeaders') };
  c.set('corsApplied', true);
  if (closeConnection) headers.connection = 'close';
  if (outcome.kind === 'processing') {
    c.set('outcome', 'processing');
    c.set('workflowId', outcome.workflowId);
    return c.json({ status: 'processing', idempotencyKey: key, workflowId: outcome.workflowId }, 202, {
      ...headers,
      location: `/v1/idempotency-keys/${encodeURIComponent(key)}`,
      'retry-after': '2',
    });
  }
  const { response, replayed } = outcome;
  c.set('outcome', replayed ? 'replayed' : response.status < 300 ? 'created' : 'rejected');
  if (outcome.workflowId) c.set('workflowId', outcome.workflowId);
  headers['content-type'] = response.status >= 400 ? 'application/problem+json' : 'application/json';
  if (response.uploadId && response.status < 300) headers.location = `/v1/uploads/${response.uploadId}`;
  if (replayed) Object.assign(headers, REPLAY_HEADERS);
  // A Response built from a plain header object goes to writeHead as is (node-server's
  // fast path); c.body() would first build a WHATWG Headers object from it.
  return new Response(response.body, { status: response.status, headers });
}
