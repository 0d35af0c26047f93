-- A rendition's companions (an HLS rung's segments) are stored bytes too: the rendition row
-- carries their total, and the derived-bytes trigger counts it with the rendition's own file.
-- Renditions written before this migration keep 0 (their segments were not measured).
ALTER TABLE renditions ADD COLUMN companion_bytes bigint NOT NULL DEFAULT 0 CHECK (companion_bytes >= 0);

CREATE OR REPLACE FUNCTION count_derived_bytes() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  written jsonb := to_jsonb(CASE WHEN TG_OP = 'INSERT' THEN NEW ELSE OLD END);
  -- image_variants has no companions: its rows have no such field.
  size bigint := (written->>'bytes')::bigint + coalesce((written->>'companion_bytes')::bigint, 0);
  delta bigint := CASE WHEN TG_OP = 'INSERT' THEN size ELSE -size END;
  owner uuid;
BEGIN
  SELECT tenant_id INTO owner FROM uploads WHERE id = (written->>'upload_id')::uuid;
  IF owner IS NULL OR delta = 0 THEN RETURN NULL; END IF;
  INSERT INTO tenant_usage AS u (tenant_id, stored_bytes) VALUES (owner, greatest(delta, 0))
    ON CONFLICT (tenant_id) DO UPDATE SET stored_bytes = greatest(0, u.stored_bytes + delta);
  INSERT INTO usage_hours AS h (tenant_id, hour, stored_added, stored_released)
    VALUES (owner, date_trunc('hour', now()), greatest(delta, 0), greatest(-delta, 0))
    ON CONFLICT (tenant_id, hour) DO UPDATE
      SET stored_added = h.stored_added + EXCLUDED.stored_added, stored_released = h.stored_released + EXCLUDED.stored_released;
  RETURN NULL;
END $$;
