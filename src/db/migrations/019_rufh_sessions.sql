-- Sessions of the IETF resumable-upload draft (RUFH): appends through the API like tus,
-- told apart by mode so each protocol's routes reach only their own sessions.
ALTER TABLE resumable_sessions DROP CONSTRAINT IF EXISTS resumable_sessions_mode_check;
ALTER TABLE resumable_sessions ADD CONSTRAINT resumable_sessions_mode_check CHECK (mode IN ('tus', 'rufh', 'direct', 'uppy'));
