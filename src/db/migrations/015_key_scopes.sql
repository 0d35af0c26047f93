-- What an API key may do: a list of scopes (src/api/scopes.ts). NULL, every key made before
-- scopes existed and every key made without a list, holds every scope, including ones added later.
ALTER TABLE api_keys ADD COLUMN scopes text[];
