-- An import batch may read its files from another S3-compatible store: where (endpoint,
-- region, bucket, prefix, shown on the batch) and its credentials, sealed with the secrets
-- box for this batch (never shown). A batch of URLs has none.
ALTER TABLE import_batches ADD COLUMN source jsonb;
