-- Downstream work: processing outcome on the upload, renditions, webhook endpoints and
-- the delivery ledger. Primary keys make every retried write a no-op.
ALTER TABLE uploads
  ADD COLUMN processing_status text NOT NULL DEFAULT 'pending'
    CHECK (processing_status IN ('pending', 'ready', 'skipped', 'failed')),
  ADD COLUMN processing_reason text,
  ADD COLUMN media jsonb,
  ADD COLUMN processed_at timestamptz;

CREATE TABLE renditions (
  upload_id     uuid NOT NULL REFERENCES uploads (id),
  name          text NOT NULL,
  storage_key   text NOT NULL UNIQUE,
  content_type  text NOT NULL,
  bytes         bigint NOT NULL,
  width         integer,
  height        integer,
  duration_ms   integer,
  created_at    timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (upload_id, name)
);

CREATE TABLE webhook_endpoints (
  id               uuid PRIMARY KEY,
  tenant_id        uuid NOT NULL REFERENCES tenants (id),
  url              text NOT NULL,
  description      text NOT NULL DEFAULT '',
  -- The signing secret must be readable to sign; it is shown to the tenant only once.
  secret           text NOT NULL,
  enabled          boolean NOT NULL DEFAULT true,
  disabled_reason  text,
  created_at       timestamptz NOT NULL DEFAULT now(),
  deleted_at       timestamptz
);
CREATE INDEX webhook_endpoints_tenant_idx ON webhook_endpoints (tenant_id) WHERE deleted_at IS NULL;

-- One row per (event, endpoint): the event id is derived from the upload and event type,
-- so however often a delivery activity runs there is exactly one ledger row.
CREATE TABLE webhook_deliveries (
  event_id      text NOT NULL,
  endpoint_id   uuid NOT NULL REFERENCES webhook_endpoints (id),
  tenant_id     uuid NOT NULL REFERENCES tenants (id),
  upload_id     uuid NOT NULL REFERENCES uploads (id),
  event_type    text NOT NULL,
  attempts      integer NOT NULL DEFAULT 0,
  last_status   integer,
  last_error    text,
  delivered_at  timestamptz,
  created_at    timestamptz NOT NULL DEFAULT now(),
  updated_at    timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (event_id, endpoint_id)
);
CREATE INDEX webhook_deliveries_upload_idx ON webhook_deliveries (upload_id);
