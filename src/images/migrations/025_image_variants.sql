-- Images on request (GET /v1/uploads/{id}/images/{spec}). A tenant's presets are immutable
-- versions of a name, as pipelines are; `image_specs` says whether its option strings are
-- served unsigned ('any') or only through presets and signed URLs ('presets', the default).
CREATE TABLE image_presets (
  tenant_id   uuid NOT NULL REFERENCES tenants (id),
  name        text NOT NULL,
  version     integer NOT NULL CHECK (version > 0),
  spec        text NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, name, version)
);

ALTER TABLE tenants ADD COLUMN image_specs text NOT NULL DEFAULT 'presets' CHECK (image_specs IN ('presets', 'any'));

-- One rendered variant per (upload, canonical spec), written once by its render run; its
-- object lives under the upload's rendition prefix, so a deletion erases it with the rest.
CREATE TABLE image_variants (
  upload_id     uuid NOT NULL REFERENCES uploads (id),
  spec          text NOT NULL,
  storage_key   text NOT NULL UNIQUE,
  content_type  text NOT NULL,
  bytes         bigint NOT NULL,
  width         integer NOT NULL,
  height        integer NOT NULL,
  created_at    timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (upload_id, spec)
);
