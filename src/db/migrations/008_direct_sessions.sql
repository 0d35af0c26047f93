-- Direct uploads (the client PUTs to the store itself) are sessions too: one per (tenant,
-- Idempotency-Key), sharing the table, its key rule and its expiry with tus sessions.
-- `mode` tells them apart; a direct session's object may already hold the client's bytes
-- before completion, so expiring it deletes the object as well. part_bytes is the size of
-- every part but the last of a multipart plan (NULL: one PUT). 'uppy' sessions are direct
-- multipart uploads made through @uppy/aws-s3's companion routes: their length is known
-- only at completion (upload_length 0 until then) and their parts carry no checksums.
ALTER TABLE resumable_sessions ADD COLUMN mode text NOT NULL DEFAULT 'tus' CHECK (mode IN ('tus', 'direct', 'uppy'));
ALTER TABLE resumable_sessions ADD COLUMN part_bytes bigint;
