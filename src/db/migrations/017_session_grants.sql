-- The upload token a session was created with (its grant as of then: limits, subject,
-- metadata). The session's commit is checked and attributed by it, and only that token (or
-- an API key of the tenant) may write to, read or end the session.
ALTER TABLE resumable_sessions ADD COLUMN upload_grant jsonb;
