-- The console's pages at scale: an upload's events (its page), and the event log's failed
-- deliveries first (a delivery that was tried and is not delivered).
CREATE INDEX webhook_events_upload_idx ON webhook_events (upload_id, created_at DESC, id DESC);
CREATE INDEX webhook_deliveries_failing_idx ON webhook_deliveries (tenant_id, event_id) WHERE delivered_at IS NULL AND attempts > 0;
