-- A storage target's own server-side encryption ({"sse": "AES256" | "aws:kms", "kmsKeyId"?}),
-- asked for on every object written to it. Null: the instance's (S3_SSE).
ALTER TABLE storage_targets ADD COLUMN encryption jsonb;
