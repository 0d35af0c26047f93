// Imports. Reading files from their origins (POST /v1/imports, batches, Uppy's URL plugin), and how many one tenant may have under way.
// docs/CONFIGURATION.md is generated from these comments (npm run docs:config).
import { z } from 'zod';
import { bool } from '../config/values';

export const importSettings = {
  /** Allow imports from loopback/private addresses (development, tests). */
  IMPORT_ALLOW_PRIVATE_NETWORKS: bool.default(false),
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
  /**
   * Per tenant, all replicas: imports not yet committed or failed; one more is `429
   * too_many_imports`.
   */
  TENANT_MAX_IMPORTS_IN_FLIGHT: z.coerce.number().int().min(1).max(100_000).default(32),
  /** Per tenant: import batches running or paused; one more is `429 too_many_import_batches`. */
  TENANT_MAX_OPEN_IMPORT_BATCHES: z.coerce.number().int().min(1).max(1000).default(4),
  /**
   * Per tenant and API process: Uppy's import progress sockets open at once; one more is refused
   * `429 too_many_progress_sockets`.
   */
  TENANT_MAX_PROGRESS_SOCKETS: z.coerce.number().int().min(1).max(100_000).default(64),
};
