-- The W3C traceparent of the step that committed an upload (tracing on): a replay of its key,
-- a redelivery or a deletion links its own trace to the upload's. A resumable session keeps
-- its creating request's: its later requests (appends, the completion) continue that trace.
-- Null with tracing off.
ALTER TABLE resumable_sessions ADD COLUMN traceparent text;
ALTER TABLE idempotency_keys ADD COLUMN traceparent text;
ALTER TABLE uploads ADD COLUMN traceparent text;
