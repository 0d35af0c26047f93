-- A re-processing job whose version lost to a newer one (the newest version is served,
-- whichever job finishes last) records that per upload.
ALTER TABLE reprocess_items DROP CONSTRAINT reprocess_items_outcome_check;
ALTER TABLE reprocess_items ADD CONSTRAINT reprocess_items_outcome_check CHECK (outcome IN ('done', 'skipped', 'failed', 'superseded'));
