// Uploads, sessions and keys. How large and how long: request bodies, resumable and direct sessions, URLs, keys and what is kept.
// docs/CONFIGURATION.md is generated from these comments (npm run docs:config).
import { z } from 'zod';

export const uploadSettings = {
  /** Larger uploads get 413. */
  MAX_UPLOAD_BYTES: z.coerce
    .number()
    .int()
    .positive()
    .default(5 * 1024 ** 3),
  /** How long `POST` waits for the result when the request does not say (`Prefer: wait=N`). */
  DEFAULT_WAIT_SECONDS: z.coerce.number().min(0).max(300).default(10),
  /** The longest any wait (`Prefer: wait=N`, `?wait=N`) may be. */
  MAX_WAIT_SECONDS: z.coerce.number().min(0).max(300).default(60),
  /** A request body slower than this is cut off (408). */
  BODY_TIMEOUT_SECONDS: z.coerce.number().positive().default(300),
  /** A started upload no attempt delivers a body for fails, freeing the key. */
  RECEIVE_TIMEOUT_SECONDS: z.coerce.number().positive().default(3600),
  /**
   * After how long (then at doubling intervals) a run still waiting for a body checks whether a lost
   * workflow task already committed its answer; it then completes with that answer and fires the
   * transcode and webhooks.
   */
  LOST_COMMIT_PROBE_SECONDS: z.coerce.number().positive().default(60),
  /** A tus or draft session not written to for this long is aborted and its key freed. */
  RESUMABLE_EXPIRY_HOURS: z.coerce.number().positive().default(24),
  /**
   * Whole-part size of tus and draft sessions (≥ 5); an append holds at most two part buffers of
   * this plus 5 MiB (the last part of an append takes a remainder below 5 MiB).
   */
  RESUMABLE_PART_MIB: z.coerce.number().min(5).max(512).default(8),
  /** How long a `PATCH`'s write lease lasts without renewal (an API killed mid-PATCH frees it then). */
  RESUMABLE_LEASE_SECONDS: z.coerce.number().int().min(2).default(30),
  /** A `PATCH` that made no progress this long is taken over by a newer one (a dead connection). */
  RESUMABLE_STALL_SECONDS: z.coerce.number().positive().default(3),
  /** A direct (or Uppy multipart) upload not completed within this is aborted and its key freed. */
  DIRECT_UPLOAD_EXPIRY_HOURS: z.coerce.number().positive().default(24),
  /** How long each signed URL lasts (never past its session). */
  DIRECT_UPLOAD_URL_SECONDS: z.coerce
    .number()
    .int()
    .min(10)
    .max(7 * 24 * 3600)
    .default(3600),
  /** Part size of multipart direct plans (raised when a file would need more than 10,000 parts). */
  DIRECT_UPLOAD_PART_MIB: z.coerce.number().int().min(5).max(5120).default(64),
  /**
   * The longest lifetime a download URL may be given (at most 7 days, S3's limit); a longer
   * `expiresInSeconds` is refused with 400.
   */
  DOWNLOAD_URL_MAX_SECONDS: z.coerce
    .number()
    .int()
    .min(10)
    .max(7 * 24 * 3600)
    .default(24 * 3600),
  /** The longest an upload token may last (POST /v1/upload-tokens; a token asks for 1 h unless it says). */
  UPLOAD_TOKEN_MAX_SECONDS: z.coerce
    .number()
    .int()
    .min(60)
    .max(30 * 24 * 3600)
    .default(24 * 3600),
  /** How long a completed key replays its answer. */
  IDEMPOTENCY_TTL_HOURS: z.coerce.number().positive().default(24),
  /** How long an expired key still answers `idempotency_key_expired`. */
  TOMBSTONE_TTL_HOURS: z.coerce
    .number()
    .positive()
    .default(24 * 7),
  /** Per-process cache of recently replayed answers; `0` turns it off. */
  REPLAY_CACHE_MIB: z.coerce.number().min(0).max(1024).default(16),
  /**
   * The longest a cached answer is kept: after an upload is deleted, another API process may replay
   * its original answer for at most this long (the process answering the DELETE forgets it at once).
   */
  REPLAY_CACHE_SECONDS: z.coerce.number().positive().max(3600).default(30),
  /**
   * How long webhook events and their attempts are kept for `GET /v1/events` and redelivery (swept
   * hourly).
   */
  EVENT_RETENTION_DAYS: z.coerce.number().positive().max(3650).default(30),
  /**
   * How often the expire-uploads Schedule starts deletions of uploads past their `expiresAt` or
   * their tenant's `retentionDays`.
   */
  RETENTION_SWEEP_SECONDS: z.coerce.number().int().min(1).max(86400).default(60),
  /** Housekeeping: attempt objects no upload references are removed once older than this. */
  STAGING_GRACE_SECONDS: z.coerce
    .number()
    .min(0)
    .default(2 * 3600),
  /** Housekeeping: multipart uploads older than this are aborted. */
  MULTIPART_MAX_AGE_SECONDS: z.coerce.number().min(0).default(86_400),
};
