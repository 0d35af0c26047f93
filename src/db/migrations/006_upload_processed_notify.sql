-- Announces every upload that reaches 'processed', whichever statement moved it there, so
-- `GET /v1/uploads/{id}?wait` wakes on the commit instead of polling. The payload is the
-- upload id; NOTIFY is delivered only when the transaction commits.
CREATE FUNCTION oncely_notify_upload_processed() RETURNS trigger
  LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('oncely_upload_processed', NEW.id::text);
  RETURN NULL;
END;
$$;

CREATE TRIGGER uploads_processed_notify
  AFTER UPDATE OF status ON uploads
  FOR EACH ROW
  WHEN (NEW.status = 'processed' AND OLD.status IS DISTINCT FROM NEW.status)
  EXECUTE FUNCTION oncely_notify_upload_processed();
