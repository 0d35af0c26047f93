-- Deletion with erasure. deleted_at is the tombstone: from then the upload's bytes are not
-- served (410) and downstream steps write nothing more. object_released says its claim on
-- the stored object was given up (for a shared object, its reference counted down), so a
-- retried release never counts twice. erased_at: bytes, renditions and personal metadata gone.
ALTER TABLE uploads
  ADD COLUMN deleted_at timestamptz,
  ADD COLUMN object_released boolean NOT NULL DEFAULT false,
  ADD COLUMN erased_at timestamptz;
