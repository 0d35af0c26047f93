-- Byte quotas and usage. A new upload reserves its declared bytes under the tenant's quotas
-- when it is admitted (one row per key); the records transaction turns the reservation into
-- usage at the stored size, once, because it is the transaction that writes the upload row.
-- Erasure releases the stored bytes; an upload that never commits loses its reservation to
-- the records transaction's rejection, its session's end or housekeeping's sweep.

-- Null: unlimited.
ALTER TABLE tenants
  ADD COLUMN max_stored_bytes bigint CHECK (max_stored_bytes >= 0),
  ADD COLUMN max_ingress_bytes_per_month bigint CHECK (max_ingress_bytes_per_month >= 0),
  ADD COLUMN max_uploads_per_month bigint CHECK (max_uploads_per_month >= 0);

CREATE TABLE quota_reservations (
  tenant_id        uuid NOT NULL REFERENCES tenants (id),
  idempotency_key  text NOT NULL,
  -- Null: the length was not declared (the commit checks the quota at the stored size).
  bytes            bigint CHECK (bytes >= 0),
  created_at       timestamptz NOT NULL DEFAULT now(),
  -- Past it, housekeeping drops the reservation unless a session or an import still holds the key.
  expires_at       timestamptz NOT NULL,
  PRIMARY KEY (tenant_id, idempotency_key)
);
CREATE INDEX quota_reservations_expiry_idx ON quota_reservations (expires_at);

-- What a tenant stores now: originals of uploads neither erased nor rejected by their pipeline,
-- and every rendition and image variant row (their rows go when their objects do).
CREATE TABLE tenant_usage (
  tenant_id     uuid PRIMARY KEY REFERENCES tenants (id),
  stored_bytes  bigint NOT NULL DEFAULT 0
);

-- Usage per tenant and hour, counted by the transactions that commit or erase (never by requests).
CREATE TABLE usage_hours (
  tenant_id        uuid NOT NULL REFERENCES tenants (id),
  hour             timestamptz NOT NULL,
  uploads          bigint NOT NULL DEFAULT 0,
  ingress_bytes    bigint NOT NULL DEFAULT 0,
  import_bytes     bigint NOT NULL DEFAULT 0,
  stored_added     bigint NOT NULL DEFAULT 0,
  stored_released  bigint NOT NULL DEFAULT 0,
  egress_bytes     bigint NOT NULL DEFAULT 0,
  renders          bigint NOT NULL DEFAULT 0,
  PRIMARY KEY (tenant_id, hour)
);

-- The uploads committed before quotas existed count from their own rows.
INSERT INTO tenant_usage (tenant_id, stored_bytes)
  SELECT tenant_id, sum(bytes) FROM uploads WHERE erased_at IS NULL AND availability <> 'rejected' GROUP BY tenant_id;
INSERT INTO usage_hours (tenant_id, hour, uploads, ingress_bytes, import_bytes, stored_added, stored_released)
  SELECT tenant_id, date_trunc('hour', created_at), count(*), sum(bytes),
         coalesce(sum(bytes) FILTER (WHERE arrival = 'import'), 0), sum(bytes), 0
    FROM uploads GROUP BY tenant_id, date_trunc('hour', created_at);
INSERT INTO usage_hours AS u (tenant_id, hour, stored_released)
  SELECT tenant_id, date_trunc('hour', coalesce(erased_at, created_at)), sum(bytes) FROM uploads
   WHERE erased_at IS NOT NULL OR availability = 'rejected'
   GROUP BY tenant_id, date_trunc('hour', coalesce(erased_at, created_at))
  ON CONFLICT (tenant_id, hour) DO UPDATE SET stored_released = u.stored_released + EXCLUDED.stored_released;

-- Renditions and image variants count as stored from their row's insert to its delete, in the
-- statement that writes the row: whatever path writes or removes one, it is counted once.
CREATE FUNCTION count_derived_bytes() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  row_upload uuid := CASE WHEN TG_OP = 'INSERT' THEN NEW.upload_id ELSE OLD.upload_id END;
  delta bigint := CASE WHEN TG_OP = 'INSERT' THEN NEW.bytes ELSE -OLD.bytes END;
  owner uuid;
BEGIN
  SELECT tenant_id INTO owner FROM uploads WHERE id = row_upload;
  IF owner IS NULL OR delta = 0 THEN RETURN NULL; END IF;
  INSERT INTO tenant_usage AS u (tenant_id, stored_bytes) VALUES (owner, greatest(delta, 0))
    ON CONFLICT (tenant_id) DO UPDATE SET stored_bytes = greatest(0, u.stored_bytes + delta);
  INSERT INTO usage_hours AS h (tenant_id, hour, stored_added, stored_released)
    VALUES (owner, date_trunc('hour', now()), greatest(delta, 0), greatest(-delta, 0))
    ON CONFLICT (tenant_id, hour) DO UPDATE
      SET stored_added = h.stored_added + EXCLUDED.stored_added, stored_released = h.stored_released + EXCLUDED.stored_released;
  RETURN NULL;
END $$;
CREATE TRIGGER renditions_count_bytes AFTER INSERT OR DELETE ON renditions FOR EACH ROW EXECUTE FUNCTION count_derived_bytes();
CREATE TRIGGER image_variants_count_bytes AFTER INSERT OR DELETE ON image_variants FOR EACH ROW EXECUTE FUNCTION count_derived_bytes();

-- The renditions and variants already stored, from their creation.
INSERT INTO tenant_usage AS u (tenant_id, stored_bytes)
  SELECT up.tenant_id, sum(d.bytes)
    FROM (SELECT upload_id, bytes FROM renditions UNION ALL SELECT upload_id, bytes FROM image_variants) d
    JOIN uploads up ON up.id = d.upload_id GROUP BY up.tenant_id
  ON CONFLICT (tenant_id) DO UPDATE SET stored_bytes = u.stored_bytes + EXCLUDED.stored_bytes;
INSERT INTO usage_hours AS h (tenant_id, hour, stored_added)
  SELECT up.tenant_id, date_trunc('hour', d.created_at), sum(d.bytes)
    FROM (SELECT upload_id, bytes, created_at FROM renditions UNION ALL SELECT upload_id, bytes, created_at FROM image_variants) d
    JOIN uploads up ON up.id = d.upload_id GROUP BY up.tenant_id, date_trunc('hour', d.created_at)
  ON CONFLICT (tenant_id, hour) DO UPDATE SET stored_added = h.stored_added + EXCLUDED.stored_added;
