// Database and object store. PostgreSQL and the S3-compatible store; unset, the embedded default runs PGlite and a local directory.
// docs/CONFIGURATION.md is generated from these comments (npm run docs:config).
import { z } from 'zod';
import { bool, optionalString } from './values';

export const storeSettings = {
  /**
   * PostgreSQL ≥ 14 connection string.
   * @default unset: embedded PGlite
   */
  DATABASE_URL: optionalString,
  /** Connections per process (the embedded PGlite always gets one). */
  DATABASE_POOL_SIZE: z.coerce.number().int().min(1).max(200).default(10),
  /**
   * `?wait` wakes on Postgres NOTIFY (one extra connection per API process); `false` polls every 250
   * ms, for poolers without LISTEN (PgBouncer transaction mode).
   */
  UPLOAD_WAIT_LISTEN: bool.default(true),
  /**
   * Workers hear each new payload data key on Postgres NOTIFY (one extra connection per worker
   * process) and open a new run's input without reading its key; `false` reads each run's key once,
   * for poolers without LISTEN.
   */
  PAYLOAD_KEY_LISTEN: bool.default(true),
  /**
   * S3-compatible endpoint.
   * @default unset: local directory store
   */
  S3_ENDPOINT: optionalString,
  /** The bucket (created when missing). */
  S3_BUCKET: z.string().default('oncely'),
  /** The bucket's region. */
  S3_REGION: z.string().default('us-east-1'),
  /** The store's credentials (unset: the AWS SDK's default chain). */
  S3_ACCESS_KEY_ID: optionalString,
  /** The store's credentials (unset: the AWS SDK's default chain). */
  S3_SECRET_ACCESS_KEY: optionalString,
  /** Path-style addressing. */
  S3_FORCE_PATH_STYLE: bool.default(true),
  /** Uploads up to this size stream into one PUT (flat memory); larger ones use multipart. */
  S3_SINGLE_PUT_MAX_MIB: z.coerce.number().int().min(0).max(5120).default(5120),
  /** Multipart part size of streamed uploads (memory per upload ≈ this × S3_QUEUE_SIZE). */
  S3_PART_SIZE_MIB: z.coerce.number().int().min(5).max(512).default(5),
  /** Parts of one streamed upload sent in parallel. */
  S3_QUEUE_SIZE: z.coerce.number().int().min(1).max(16).default(2),
  /**
   * Where clients reach the store (the host in direct uploads' signed URLs).
   * @default `S3_ENDPOINT`
   */
  S3_PUBLIC_ENDPOINT: optionalString,
  /**
   * Server-side encryption asked for on every object written: `AES256` (SSE-S3) or `aws:kms` (SSE-KMS, with this key or the bucket's default): streamed PUTs, multipart uploads (their parts
   * inherit it), direct uploads (a signed PUT's `upload.headers` then carry `x-amz-server-side-encryption`, which the client must send).
   */
  S3_SSE: optionalString.pipe(z.enum(['AES256', 'aws:kms']).optional()),
  /** The KMS key for S3_SSE=aws:kms (unset: the bucket's default key). */
  S3_SSE_KMS_KEY_ID: optionalString,
  /**
   * The residency label of the instance's store (the default target), checked against a tenant's
   * required residency like a registered target's.
   * @default unset: no label
   */
  STORAGE_RESIDENCY: optionalString,
  /**
   * How long a storage migration keeps a moved upload's source objects before deleting them, so a
   * download URL signed before the move still reads them.
   * @default `DOWNLOAD_URL_MAX_SECONDS`
   */
  STORAGE_MIGRATION_SOURCE_GRACE_SECONDS: z.coerce
    .number()
    .int()
    .min(0)
    .max(7 * 24 * 3600)
    .optional(),
};
