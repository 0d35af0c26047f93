-- When each API key was last used to authenticate (to the minute: a use is recorded at most
-- once a minute per key and process). Null: not used since this column was added.
ALTER TABLE api_keys ADD COLUMN last_used_at timestamptz;
