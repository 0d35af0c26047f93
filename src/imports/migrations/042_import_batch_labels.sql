-- An import batch's labels (metadata and tags every item's upload carries) and each URL item's
-- own (its metadata keys over the batch's, its tags with the batch's). Absent: none.
ALTER TABLE import_batches ADD COLUMN labels jsonb;
ALTER TABLE import_batch_items ADD COLUMN labels jsonb;
