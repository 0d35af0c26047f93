// Outbound requests. Oncely as a client: the storage targets it proves and the webhooks it delivers (imports have a section of their own).
// docs/CONFIGURATION.md is generated from these comments (npm run docs:config).
import { z } from 'zod';
import { bool } from './values';

export const outboundSettings = {
  /** Allow storage targets (POST /v1/storage-targets) on loopback/private addresses (development, tests, a store inside the operator's network). */
  STORAGE_TARGET_ALLOW_PRIVATE_NETWORKS: bool.default(false),
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
