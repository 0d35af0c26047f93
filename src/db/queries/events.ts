// The event log: events with the body they are sent with, attempts per endpoint, the
// delivery lease, and the reads behind GET /v1/events.
import type { Queryable } from '../pool';
import { pastPosition, positionColumn, type ListPosition } from './keyset';

export type AttemptTrigger = 'automatic' | 'manual' | 'recover';

export interface EventRow {
  id: string;
  tenant_id: string;
  /** Null: not an upload's event (a storage migration's end). */
  upload_id: string | null;
  type: string;
  payload: string;
  created_at: Date;
}

export interface AttemptRow {
  id: string;
  event_id: string;
  endpoint_id: string;
  trigger: AttemptTrigger;
  attempted_at: Date;
  duration_ms: number;
  status: number | null;
  error: string | null;
  delivered: boolean;
}

/**
 * Records the event unless it is there and returns the body recorded first (every send uses
 * it); undefined, recording nothing, once the upload is tombstoned, unless the event is one
 * sent after the tombstone (upload.deleted).
 */
export async function recordEvent(
  db: Queryable,
  e: Omit<EventRow, 'created_at'>,
  opts: { afterTombstone: boolean },
): Promise<string | undefined> {
  const res = await db.query<{ payload: string }>(
    `WITH live AS (SELECT $6::boolean OR NOT EXISTS (SELECT 1 FROM uploads WHERE id = $3 AND deleted_at IS NOT NULL) AS ok),
     ins AS (
       INSERT INTO webhook_events (id, tenant_id, upload_id, type, payload) SELECT $1, $2, $3, $4, $5 FROM live WHERE ok
       ON CONFLICT (id) DO NOTHING RETURNING payload)
     SELECT payload FROM ins UNION ALL SELECT payload FROM webhook_events, live WHERE id = $1 AND ok LIMIT 1`,
    [e.id, e.tenant_id, e.upload_id, e.type, e.payload, opts.afterTombstone],
  );
  return res.rows[0]?.payload;
}

export async function findEvent(db: Queryable, tenantId: string, id: string): Promise<EventRow | undefined> {
  const res = await db.query<EventRow>('SELECT * FROM webhook_events WHERE tenant_id = $1 AND id = $2', [tenantId, id]);
  return res.rows[0];
}

/**
 * Takes the delivery's lease for `seconds` (creating its ledger row) for `holder`; false
 * while another holder's attempt has it. The same holder (a retry of the same activity,
 * whose earlier attempt is over) takes it back at once. Answers whether it is delivered.
 */
export async function claimDelivery(
  db: Queryable,
  d: { eventId: string; endpointId: string; tenantId: string; uploadId: string | null; eventType: string; seconds: number; holder: string },
): Promise<{ claimed: false } | { claimed: true; delivered: boolean }> {
  const res = await db.query<{ delivered: boolean }>(
    `INSERT INTO webhook_deliveries (event_id, endpoint_id, tenant_id, upload_id, event_type, sending_until, sending_holder)
     VALUES ($1, $2, $3, $4, $5, now() + make_interval(secs => $6), $7)
     ON CONFLICT (event_id, endpoint_id) DO UPDATE SET sending_until = EXCLUDED.sending_until, sending_holder = EXCLUDED.sending_holder
       WHERE webhook_deliveries.sending_until IS NULL OR webhook_deliveries.sending_until < now()
          OR webhook_deliveries.sending_holder = EXCLUDED.sending_holder
     RETURNING delivered_at IS NOT NULL AS delivered`,
    [d.eventId, d.endpointId, d.tenantId, d.uploadId, d.eventType, d.seconds, d.holder],
  );
  return res.rows[0] ? { claimed: true, delivered: res.rows[0].delivered } : { claimed: false };
}

/** Gives the lease back, if `holder` still has it. */
export async function releaseDelivery(db: Queryable, eventId: string, endpointId: string, holder: string): Promise<void> {
  await db.query(
    `UPDATE webhook_deliveries SET sending_until = NULL, sending_holder = NULL
      WHERE event_id = $1 AND endpoint_id = $2 AND sending_holder = $3`,
    [eventId, endpointId, holder],
  );
}

/**
 * Records one attempt of a claimed delivery in one statement: the attempt row, the ledger's
 * count, last answer and delivery time, and the lease given back (if `holder` still has it).
 */
export async function finishAttempt(db: Queryable, a: Omit<AttemptRow, 'id' | 'attempted_at'> & { holder: string }): Promise<void> {
  await db.query(
    `WITH ledger AS (
       UPDATE webhook_deliveries
          SET attempts = attempts + 1, last_status = $5, last_error = $6,
              delivered_at = coalesce(delivered_at, CASE WHEN $7 THEN now() END), updated_at = now(),
              sending_until = CASE WHEN sending_holder = $8 THEN NULL ELSE sending_until END,
              sending_holder = CASE WHEN sending_holder = $8 THEN NULL ELSE sending_holder END
        WHERE event_id = $1 AND endpoint_id = $2
        RETURNING tenant_id)
     INSERT INTO webhook_attempts (event_id, endpoint_id, tenant_id, trigger, duration_ms, status, error, delivered)
     SELECT $1, $2, tenant_id, $3, $4, $5, $6, $7 FROM ledger`,
    [a.event_id, a.endpoint_id, a.trigger, a.duration_ms, a.status, a.error, a.delivered, a.holder],
  );
}

export async function listAttempts(db: Queryable, eventId: string): Promise<AttemptRow[]> {
  const res = await db.query<AttemptRow>('SELECT * FROM webhook_attempts WHERE event_id = $1 ORDER BY id', [eventId]);
  return res.rows;
}

export interface EventFilter {
  type?: string;
  uploadId?: string;
  /** Only events with a delivery not (yet) delivered after at least one attempt. */
  deliveryFailed?: boolean;
}

/** One page of a tenant's events, newest first, after the (created_at µs, id) position. */
export async function listEvents(
  db: Queryable,
  tenantId: string,
  filter: EventFilter,
  after: ListPosition | undefined,
  limit: number,
): Promise<(EventRow & { created_micros: string })[]> {
  const values: unknown[] = [tenantId];
  const where = ['e.tenant_id = $1'];
  if (after) where.push(pastPosition(values, after, '<', 'text', 'e.'));
  if (filter.type) where.push(`e.type = $${values.push(filter.type)}`);
  if (filter.uploadId) where.push(`e.upload_id = $${values.push(filter.uploadId)}`);
  if (filter.deliveryFailed)
    where.push(`EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.event_id = e.id AND d.delivered_at IS NULL AND d.attempts > 0)`);
  values.push(limit);
  const res = await db.query<EventRow & { created_micros: string }>(
    `SELECT e.*, ${positionColumn('e.')} FROM webhook_events e
      WHERE ${where.join(' AND ')} ORDER BY e.created_at DESC, e.id DESC LIMIT $${values.length}`,
    values,
  );
  return res.rows;
}

/** An endpoint's undelivered events recorded in [since, until), oldest first, after `after`. */
export async function failedDeliveries(
  db: Queryable,
  endpointId: string,
  since: Date,
  until: Date,
  after: ListPosition | null,
  limit: number,
): Promise<{ event_id: string; created_micros: string }[]> {
  const values: unknown[] = [endpointId, since, until, limit];
  const past = after ? `AND ${pastPosition(values, after, '>', 'text', 'e.')}` : '';
  const res = await db.query<{ event_id: string; created_micros: string }>(
    `SELECT d.event_id, ${positionColumn('e.')}
       FROM webhook_deliveries d JOIN webhook_events e ON e.id = d.event_id
      WHERE d.endpoint_id = $1 AND d.delivered_at IS NULL AND e.created_at >= $2 AND e.created_at < $3 ${past}
      ORDER BY e.created_at, e.id LIMIT $4`,
    values,
  );
  return res.rows;
}

/** Removes events (and their attempts) older than `days`; how many events went. */
export async function expireEvents(db: Queryable, days: number, batch = 1000): Promise<number> {
  const res = await db.query(
    `WITH old AS (SELECT id FROM webhook_events WHERE created_at < now() - make_interval(days => $1) ORDER BY created_at LIMIT $2),
          a AS (DELETE FROM webhook_attempts WHERE event_id IN (SELECT id FROM old))
     DELETE FROM webhook_events WHERE id IN (SELECT id FROM old)`,
    [days, batch],
  );
  return res.rowCount ?? 0;
}

/** The endpoints an event was addressed to, with their ledger rows. */
export async function listEventDeliveries(
  db: Queryable,
  eventId: string,
): Promise<{ endpoint_id: string; attempts: number; last_status: number | null; last_error: string | null; delivered_at: Date | null }[]> {
  const res = await db.query(
    'SELECT endpoint_id, attempts, last_status, last_error, delivered_at FROM webhook_deliveries WHERE event_id = $1 ORDER BY created_at, endpoint_id',
    [eventId],
  );
  return res.rows;
}
