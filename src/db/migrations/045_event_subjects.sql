-- An event need not be an upload's: a storage migration announces its end. Such an event and
-- its deliveries have no upload (its subject is named in its id and its data).
ALTER TABLE webhook_events ALTER COLUMN upload_id DROP NOT NULL;
ALTER TABLE webhook_deliveries ALTER COLUMN upload_id DROP NOT NULL;
