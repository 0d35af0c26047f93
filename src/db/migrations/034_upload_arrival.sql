-- The door an upload came through (src/modes.ts), recorded with the upload; NULL for uploads
-- committed before it was recorded.
ALTER TABLE uploads ADD COLUMN arrival text;
