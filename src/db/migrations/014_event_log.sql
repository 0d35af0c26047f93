-- The event log. Every webhook event is kept with the exact body it is sent with (first
-- recorded wins), so a redelivery carries the same webhook-id and the same bytes; every
-- attempt per endpoint is kept with its trigger, time, duration and outcome. sending_until
-- is a delivery's lease: while one attempt holds it no other (an automatic retry, a manual
-- redelivery) sends, so a race adds at most one copy; sending_holder names the activity
-- holding it, whose own retry (its previous attempt is over) may take it over at once.
-- Swept after EVENT_RETENTION_DAYS.
CREATE TABLE webhook_events (
  id          text PRIMARY KEY,
  tenant_id   uuid NOT NULL REFERENCES tenants (id),
  upload_id   uuid NOT NULL,
  type        text NOT NULL,
  payload     text NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX webhook_events_tenant_idx ON webhook_events (tenant_id, created_at DESC, id DESC);
CREATE INDEX webhook_events_created_idx ON webhook_events (created_at);

CREATE TABLE webhook_attempts (
  id            bigserial PRIMARY KEY,
  event_id      text NOT NULL,
  endpoint_id   uuid NOT NULL,
  tenant_id     uuid NOT NULL,
  trigger       text NOT NULL CHECK (trigger IN ('automatic', 'manual', 'recover')),
  attempted_at  timestamptz NOT NULL DEFAULT now(),
  duration_ms   integer NOT NULL,
  status        integer,
  error         text,
  delivered     boolean NOT NULL
);
CREATE INDEX webhook_attempts_event_idx ON webhook_attempts (event_id, id);

ALTER TABLE webhook_deliveries ADD COLUMN sending_until timestamptz, ADD COLUMN sending_holder text;
CREATE INDEX webhook_deliveries_failed_idx ON webhook_deliveries (endpoint_id, created_at) WHERE delivered_at IS NULL;
