-- Every request an Idempotency-Key answered or refused, per key: the first answer, its replays,
-- the requests that attached to its run, the key rule's refusals (reuse, expiry, in flight). The first 50 are
-- kept with their times and request ids; the tally counts them all. Written a batch at a time
-- by each API process (src/http/key-request-log.ts), removed by housekeeping once the key's
-- row is gone and the key has been quiet for the tombstone window.
CREATE TABLE key_request_tallies (
  tenant_id        uuid NOT NULL,
  idempotency_key  text NOT NULL,
  requests         bigint NOT NULL,
  first_at         timestamptz NOT NULL,
  last_at          timestamptz NOT NULL,
  PRIMARY KEY (tenant_id, idempotency_key)
);
CREATE INDEX key_request_tallies_last_idx ON key_request_tallies (last_at);

CREATE TABLE key_requests (
  tenant_id        uuid NOT NULL,
  idempotency_key  text NOT NULL,
  n                bigint NOT NULL,
  at               timestamptz NOT NULL,
  request_id       text NOT NULL,
  method           text NOT NULL,
  route            text NOT NULL,
  status           integer NOT NULL,
  outcome          text NOT NULL,
  PRIMARY KEY (tenant_id, idempotency_key, n)
);
