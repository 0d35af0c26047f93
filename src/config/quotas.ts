// Tenant quotas. What one tenant may hold or run at once; one more is refused (409 or 429) and changes nothing.
// docs/CONFIGURATION.md is generated from these comments (npm run docs:config).
import { z } from 'zod';

export const quotaSettings = {
  /**
   * Uploads one tenant has being received or awaited at once, per API process; one more is `429
   * too_many_uploads`.
   */
  TENANT_MAX_UPLOADS_IN_FLIGHT: z.coerce.number().int().min(1).default(64),
  /**
   * Per tenant, all replicas: tus, draft, direct and Uppy sessions not yet committed; one more is
   * `429 too_many_sessions`.
   */
  TENANT_MAX_OPEN_SESSIONS: z.coerce.number().int().min(1).max(1_000_000).default(256),
  /** Image renders of one tenant running at once (a new cold variant past it: `429`). */
  TENANT_MAX_RENDERS_IN_FLIGHT: z.coerce.number().int().min(1).max(10_000).default(8),
  /** Storage targets one tenant may register; one more is `409 quota_exceeded`. */
  TENANT_MAX_STORAGE_TARGETS: z.coerce.number().int().min(1).max(1000).default(16),
  /** Image preset names per tenant; one more is `409 quota_exceeded`. */
  TENANT_MAX_IMAGE_PRESETS: z.coerce.number().int().min(1).max(10_000).default(64),
  /** Live webhook endpoints per tenant; one more is `409 quota_exceeded`. */
  TENANT_MAX_WEBHOOK_ENDPOINTS: z.coerce.number().int().min(1).max(256).default(16),
  /** Active API keys per tenant; one more is `409 quota_exceeded`. */
  TENANT_MAX_API_KEYS: z.coerce.number().int().min(1).max(10_000).default(32),
  /** Pipeline names per tenant; one more is `409 quota_exceeded`. */
  TENANT_MAX_PIPELINES: z.coerce.number().int().min(1).max(10_000).default(64),
  /**
   * How long a new upload's reservation under its tenant's byte quotas lasts when nothing ends
   * it sooner (its commit, its refusal, its session's end); unset: RECEIVE_TIMEOUT_SECONDS. An
   * upload committing after its reservation lapsed is checked against the quotas at the commit.
   */
  QUOTA_RESERVATION_SECONDS: z.coerce.number().int().min(1).max(604_800).optional(),
  /** Versions of one upload's record (its metadata and tags, version 1 included); a change past them is `409 quota_exceeded`. */
  RECORD_MAX_VERSIONS: z.coerce.number().int().min(2).max(1_000_000).default(1000),
  /** Versions of one pipeline name; one more is `409 quota_exceeded`. */
  PIPELINE_MAX_VERSIONS: z.coerce.number().int().min(1).max(100_000).default(100),
};
