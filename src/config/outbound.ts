// Imports and webhooks. Oncely as a client: reading files from origins, delivering events to endpoints.
// docs/CONFIGURATION.md is generated from these comments (npm run docs:config).
import { z } from 'zod';
import { bool } from './values';

export const outboundSettings = {
  /** Allow imports from loopback/private addresses (development, tests). */
  IMPORT_ALLOW_PRIVATE_NETWORKS: bool.default(false),
  /** Allow storage targets (POST /v1/storage-targets) on loopback/private addresses (development, tests, a store inside the operator's network). */
  STORAGE_TARGET_ALLOW_PRIVATE_NETWORKS: bool.default(false),
  /** Redirects an import follows, each checked like the first URL. */
  IMPORT_MAX_REDIRECTS: z.coerce.number().int().min(0).max(20).default(5),
  /** An import's connect timeout. */
  IMPORT_CONNECT_SECONDS: z.coerce.number().positive().max(300).default(10),
  /**
   * The longest an origin may keep an import waiting for its headers, or between two chunks of its
   * body.
   */
  IMPORT_IDLE_SECONDS: z.coerce.number().positive().max(3600).default(60),
  /** The longest one read of a file may take; a later attempt resumes where it stopped. */
  IMPORT_ATTEMPT_SECONDS: z.coerce
    .number()
    .positive()
    .default(6 * 3600),
  /** Reads (each resuming) before an import fails: a cut, a timeout, an origin's 5xx. */
  IMPORT_MAX_ATTEMPTS: z.coerce.number().int().min(1).max(100).default(8),
  /**
   * An import's read not heard from this long (its worker died) is retried elsewhere, resuming from
   * its last recorded progress.
   */
  IMPORT_HEARTBEAT_SECONDS: z.coerce.number().min(2).max(600).default(10),
  /** Allow loopback/private webhook targets (link-local is always refused). */
  WEBHOOK_ALLOW_PRIVATE_NETWORKS: bool.default(false),
  /** Per-attempt timeout of a webhook delivery. */
  WEBHOOK_TIMEOUT_SECONDS: z.coerce.number().positive().default(15),
  /** Webhook delivery retries: the first interval. */
  WEBHOOK_RETRY_INITIAL_SECONDS: z.coerce.number().positive().default(5),
  /** Webhook delivery retries: each interval is the last times this. */
  WEBHOOK_RETRY_COEFFICIENT: z.coerce.number().min(1).default(6),
  /** Webhook delivery retries: the longest interval. */
  WEBHOOK_RETRY_MAX_INTERVAL_SECONDS: z.coerce.number().positive().default(36_000),
  /** Webhook delivery retries: attempts before the delivery gives up. */
  WEBHOOK_RETRY_MAX_ATTEMPTS: z.coerce.number().int().min(1).default(8),
};
