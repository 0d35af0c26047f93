-- Announces every new data key, so a worker holds a run's key before the run's first
-- activation asks for it (src/temporal/payload-key-notices.ts) instead of reading it then.
-- The payload is what a read by id would answer: the key stays wrapped by SECRETS_KEY, and
-- whoever may LISTEN on this database may read the table anyway. Sent only on commit.
CREATE FUNCTION oncely_notify_payload_key() RETURNS trigger
  LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('oncely_payload_key', json_build_object('id', NEW.id, 'scope', NEW.scope, 'wrapped', NEW.wrapped)::text);
  RETURN NULL;
END;
$$;

CREATE TRIGGER payload_keys_notify
  AFTER INSERT ON payload_keys
  FOR EACH ROW
  EXECUTE FUNCTION oncely_notify_payload_key();
