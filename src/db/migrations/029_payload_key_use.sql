-- When a run's data key was last handed to a process about to seal with it (`used_at`; its
-- creation until then). The replay lookup records a new run's key before the request's body
-- is read, so a request refused before its run starts leaves a key nothing was sealed with:
-- housekeeping removes a run key unused this long whose run Temporal does not know and that
-- no upload names (src/db/queries/payload-keys.ts), and a sealer's use keeps it.
ALTER TABLE payload_keys ADD COLUMN used_at timestamptz;
CREATE INDEX payload_keys_unused_runs ON payload_keys (coalesce(used_at, created_at))
  WHERE destroyed_at IS NULL AND scope LIKE 'run:%';
