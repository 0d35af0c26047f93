-- Moving uploads between storage targets: a migration (one durable run, `storage-migration/{id}`)
-- moves each upload on `from_target` (null: the instance's store) matching its filter in a run of
-- its own (`move/{uploadId}`), recording one outcome per upload. One migration at a time runs
-- from a source, so a second one over the same objects is refused, never run twice.
CREATE TABLE storage_migrations (
  id           uuid PRIMARY KEY,
  tenant_id    uuid NOT NULL REFERENCES tenants (id),
  from_target  uuid REFERENCES storage_targets (id),
  to_target    uuid REFERENCES storage_targets (id),
  filter       jsonb NOT NULL DEFAULT '{}',
  state        text NOT NULL DEFAULT 'running' CHECK (state IN ('running', 'paused', 'completed', 'cancelled')),
  total        integer NOT NULL,
  created_at   timestamptz NOT NULL DEFAULT now(),
  finished_at  timestamptz,
  CHECK (from_target IS DISTINCT FROM to_target)
);
CREATE INDEX storage_migrations_tenant_idx ON storage_migrations (tenant_id, created_at DESC, id DESC);
CREATE UNIQUE INDEX storage_migrations_open_source_idx
  ON storage_migrations (tenant_id, coalesce(from_target, '00000000-0000-0000-0000-000000000000'::uuid))
  WHERE state IN ('running', 'paused');

CREATE TABLE storage_migration_items (
  migration_id  uuid NOT NULL REFERENCES storage_migrations (id),
  upload_id     uuid NOT NULL,
  outcome       text NOT NULL CHECK (outcome IN ('moved', 'skipped', 'failed')),
  reason        text,
  bytes         bigint NOT NULL DEFAULT 0,
  -- A moved upload's original address before the move: its sources are released from there.
  source        text,
  -- Whether it had renditions or variants (their prefix at the source is listed only then).
  derived       boolean NOT NULL DEFAULT false,
  PRIMARY KEY (migration_id, upload_id)
);
