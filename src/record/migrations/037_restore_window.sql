-- A restore window after delete: a tenant's deleteGraceHours (0: erased at once). During the
-- window the upload is tombstoned (its bytes answer 410) and restorable_until says until
-- when POST …/restore brings it back; restores numbers its upload.restored events.
ALTER TABLE tenants ADD COLUMN delete_grace_hours integer NOT NULL DEFAULT 0;
ALTER TABLE uploads ADD COLUMN restorable_until timestamptz, ADD COLUMN restores integer NOT NULL DEFAULT 0;
