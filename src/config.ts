// Configuration is parsed once, from the environment, with zod. Everything else receives
// the typed object; nothing reads process.env directly.
import { readFileSync } from 'node:fs';
import { z } from 'zod';

const bool = z.enum(['true', 'false', '1', '0', 'yes', 'no']).transform((v) => v === 'true' || v === '1' || v === 'yes');

/** A comma-separated list (blank entries dropped), `fallback` when unset. */
const commaList = (fallback: string) =>
  z
    .string()
    .default(fallback)
    .transform((v) =>
      v
        .split(',')
        .map((item) => item.trim())
        .filter(Boolean),
    );

const optionalString = z
  .string()
  .optional()
  .transform((v) => (v === undefined || v === '' ? undefined : v));

// Worker tuning an operator may need on another machine size (Temporal's WorkerOptions of the
// same names); bench/README.md has what each measured here. Unset: the SDK's defaults.
const pollerBehavior = z.discriminatedUnion('type', [
  z.strictObject({ type: z.literal('simple-maximum'), maximum: z.number().int().min(2).max(200) }),
  z.strictObject({
    type: z.literal('autoscaling'),
    minimum: z.number().int().min(1).max(200).optional(),
    maximum: z.number().int().min(1).max(200).optional(),
    initial: z.number().int().min(1).max(200).optional(),
  }),
]);
const workerTuning = z.strictObject({
  maxConcurrentWorkflowTaskExecutions: z.number().int().min(2).max(1000).optional(),
  maxConcurrentLocalActivityExecutions: z.number().int().min(1).max(1000).optional(),
  maxCachedWorkflows: z.number().int().min(0).max(100_000).optional(),
  workflowTaskPollerBehavior: pollerBehavior.optional(),
  nonStickyToStickyPollRatio: z.number().min(0).max(1).optional(),
  reuseV8Context: z.boolean().optional(),
  workflowThreadPoolSize: z.number().int().min(1).max(16).optional(),
});

export const configSchema = z.object({
  HOST: z.string().default('127.0.0.1'),
  /** Where clients reach the API (behind a proxy: its public origin, maybe with a path); unset: each request's own origin. */
  PUBLIC_URL: optionalString.refine(
    (v) => v === undefined || (/^https?:\/\//.test(v) && URL.canParse(v) && !/[?#]/.test(v)),
    'must be an http(s) URL without query or fragment',
  ),
  PORT: z.coerce.number().int().min(0).max(65535).default(3000),
  DATA_DIR: z.string().default('.data'),
  /** A role not serving this long after its process started logs the step it waits for and exits (code 75). */
  START_TIMEOUT_SECONDS: z.coerce.number().positive().max(86_400).default(300),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),

  DATABASE_URL: optionalString,
  DATABASE_POOL_SIZE: z.coerce.number().int().min(1).max(200).default(10),
  /** LISTEN for processed uploads (off behind poolers without LISTEN, e.g. PgBouncer in transaction mode). */
  UPLOAD_WAIT_LISTEN: bool.default(true),
  /** Workers LISTEN for new payload data keys (off behind poolers without LISTEN: each run's key is then read once). */
  PAYLOAD_KEY_LISTEN: bool.default(true),

  S3_ENDPOINT: optionalString,
  S3_BUCKET: z.string().default('oncely'),
  S3_REGION: z.string().default('us-east-1'),
  S3_ACCESS_KEY_ID: optionalString,
  S3_SECRET_ACCESS_KEY: optionalString,
  S3_FORCE_PATH_STYLE: bool.default(true),
  S3_PART_SIZE_MIB: z.coerce.number().int().min(5).max(512).default(5),
  S3_QUEUE_SIZE: z.coerce.number().int().min(1).max(16).default(2),
  /** Uploads up to this size stream into one PUT (no part buffers); larger ones use multipart. */
  S3_SINGLE_PUT_MAX_MIB: z.coerce.number().int().min(0).max(5120).default(5120),
  /** Server-side encryption of every object written (presigned PUTs and multipart uploads included): SSE-S3 or SSE-KMS. */
  S3_SSE: optionalString.pipe(z.enum(['AES256', 'aws:kms']).optional()),
  /** The KMS key for S3_SSE=aws:kms (unset: the bucket's default key). */
  S3_SSE_KMS_KEY_ID: optionalString,
  /** Where clients reach the S3 server (direct uploads' signed URLs); default S3_ENDPOINT. */
  S3_PUBLIC_ENDPOINT: optionalString,

  TEMPORAL_ADDRESS: optionalString,
  /**
   * Embedded parts an `api` or `worker` role may run in place of a setting, asked for by name
   * (comma-separated: database, store, temporal, secrets). Without it a split role missing
   * DATABASE_URL, S3_ENDPOINT, TEMPORAL_ADDRESS or SECRETS_KEY refuses to start; role `all`,
   * the embedded default, runs each part whose setting is unset.
   */
  EMBEDDED: commaList('').pipe(z.array(z.enum(['database', 'store', 'temporal', 'secrets']))),
  TEMPORAL_NAMESPACE: z.string().default('default'),
  TEMPORAL_UI_PORT: z.coerce.number().int().min(1).max(65535).default(8233),
  TASK_QUEUE_UPLOADS: z.string().min(1).default('uploads'),
  TASK_QUEUE_TRANSCODE: z.string().min(1).default('transcode'),

  MAX_UPLOAD_BYTES: z.coerce
    .number()
    .int()
    .positive()
    .default(5 * 1024 ** 3),
  DEFAULT_WAIT_SECONDS: z.coerce.number().min(0).max(300).default(10),
  MAX_WAIT_SECONDS: z.coerce.number().min(0).max(300).default(60),
  /** How long a client may take to send the whole body before the server gives up. */
  BODY_TIMEOUT_SECONDS: z.coerce.number().positive().default(300),
  /** How long a started upload waits for any attempt to deliver a complete copy. */
  RECEIVE_TIMEOUT_SECONDS: z.coerce.number().positive().default(3600),
  /** When a run still waiting for its copy first checks (then at doubling intervals) for an answer a lost workflow task committed. */
  LOST_COMMIT_PROBE_SECONDS: z.coerce.number().positive().default(60),
  /** A resumable (tus) session not written to for this long is aborted and its key freed. */
  RESUMABLE_EXPIRY_HOURS: z.coerce.number().positive().default(24),
  /** Whole-part size of resumable sessions (S3 needs ≥ 5 MiB); the most a PATCH buffers. */
  RESUMABLE_PART_MIB: z.coerce.number().min(5).max(512).default(8),
  /** How long a PATCH's write lease lasts without renewal (an API killed mid-PATCH frees it then). */
  RESUMABLE_LEASE_SECONDS: z.coerce.number().int().min(2).default(30),
  /** A PATCH that made no progress for this long is taken over by a newer one (a dead connection). */
  RESUMABLE_STALL_SECONDS: z.coerce.number().positive().default(3),
  /** A direct-upload session not completed within this is aborted and its key freed. */
  DIRECT_UPLOAD_EXPIRY_HOURS: z.coerce.number().positive().default(24),
  /** How long each signed URL of a direct upload stays valid (never past the session's expiry). */
  DIRECT_UPLOAD_URL_SECONDS: z.coerce
    .number()
    .int()
    .min(10)
    .max(7 * 24 * 3600)
    .default(3600),
  /** The longest a download URL may last (POST /v1/uploads/{id}/download-urls); S3 allows 7 days. */
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
  /** Part size of multipart direct uploads (above S3_SINGLE_PUT_MAX_MIB); S3 allows 10,000 parts. */
  DIRECT_UPLOAD_PART_MIB: z.coerce.number().int().min(5).max(5120).default(64),
  /** On SIGTERM, after the drain: the bound on an in-flight request; connections still open then are cut. */
  SHUTDOWN_GRACE_SECONDS: z.coerce.number().min(0).default(30),
  /**
   * API role: after SIGTERM, /readyz answers 503 and every request is still served this long
   * (each answer closing its connection) before the listener closes, so a load balancer
   * takes the replica out first.
   */
  SHUTDOWN_DRAIN_SECONDS: z.coerce.number().min(0).max(600).default(5),
  /** The built-in default pipeline's sizes (pixels / ffmpeg bitrate). */
  /** ffmpeg/ffprobe/pdftoppm runs longer than this are killed and the step is 'failed'. */
  TRANSCODE_TIMEOUT_SECONDS: z.coerce.number().positive().default(600),
  /** Pictures with more pixels than this fail their image step (decompression bombs); sharp's own default. */
  IMAGE_MAX_PIXELS: z.coerce.number().int().min(1).default(268_402_689),
  /**
   * The most one image variant may cost to render: its pixels times its format's cost per pixel
   * (JPEG 1, PNG 1.5, WebP 2, AVIF 6), in megapixels (48: a 48 MP JPEG, an 8 MP AVIF).
   */
  IMAGE_MAX_RENDER_COST: z.coerce.number().positive().default(48),
  /** Distinct variants (GET /v1/uploads/{id}/images/{spec}) one upload may have. */
  IMAGE_MAX_VARIANTS_PER_UPLOAD: z.coerce.number().int().min(1).max(10_000).default(50),
  /** Image renders of one tenant running at once (a cold variant past it answers 429). */
  TENANT_MAX_RENDERS_IN_FLIGHT: z.coerce.number().int().min(1).max(10_000).default(8),
  /** Image preset names per tenant, and versions per name. */
  TENANT_MAX_IMAGE_PRESETS: z.coerce.number().int().min(1).max(10_000).default(64),
  IMAGE_PRESET_MAX_VERSIONS: z.coerce.number().int().min(1).max(100_000).default(100),
  THUMBNAIL_SIZE: z.coerce.number().int().min(16).max(4096).default(256),
  DISPLAY_SIZE: z.coerce.number().int().min(16).max(8192).default(1280),
  POSTER_WIDTH: z.coerce.number().int().min(16).max(8192).default(1280),
  AUDIO_BITRATE: z
    .string()
    .regex(/^\d+k$/)
    .default('128k'),
  /** Webhooks: loopback/private targets are refused unless allowed (development, tests). */
  WEBHOOK_ALLOW_PRIVATE_NETWORKS: bool.default(false),
  /** Imports (POST /v1/imports): origins on loopback/private networks are refused unless allowed (development, tests). */
  IMPORT_ALLOW_PRIVATE_NETWORKS: bool.default(false),
  /** Redirects an import follows, each checked like the first URL. */
  IMPORT_MAX_REDIRECTS: z.coerce.number().int().min(0).max(20).default(5),
  IMPORT_CONNECT_SECONDS: z.coerce.number().positive().max(300).default(10),
  /** Longest an origin may keep an import waiting for its headers, or between two chunks of its body. */
  IMPORT_IDLE_SECONDS: z.coerce.number().positive().max(3600).default(60),
  /** Longest one attempt at reading a file may take; a later attempt resumes where it stopped. */
  IMPORT_ATTEMPT_SECONDS: z.coerce
    .number()
    .positive()
    .default(6 * 3600),
  /** Attempts at reading a file before the import fails (a cut, a timeout, an origin's 5xx); each resumes. */
  IMPORT_MAX_ATTEMPTS: z.coerce.number().int().min(1).max(100).default(8),
  /** An import's read not heard from for this long (its worker died) is retried, resuming where it was. */
  IMPORT_HEARTBEAT_SECONDS: z.coerce.number().min(2).max(600).default(10),
  /** Per tenant: import batches not yet completed or cancelled (429 past it). */
  TENANT_MAX_OPEN_IMPORT_BATCHES: z.coerce.number().int().min(1).max(1000).default(4),
  /** Per tenant, all replicas: imports not yet committed or failed (429 past it). */
  TENANT_MAX_IMPORTS_IN_FLIGHT: z.coerce.number().int().min(1).max(100_000).default(32),
  /** Per tenant and API process: Uppy's progress sockets open at once (429 past it). */
  TENANT_MAX_PROGRESS_SOCKETS: z.coerce.number().int().min(1).max(100_000).default(64),
  /** Per-tenant quotas: live webhook endpoints, active API keys (counts, 409 past them). */
  TENANT_MAX_WEBHOOK_ENDPOINTS: z.coerce.number().int().min(1).max(256).default(16),
  TENANT_MAX_API_KEYS: z.coerce.number().int().min(1).max(10_000).default(32),
  /** Per-tenant quotas on declarations: pipeline names, and versions of one name (409 past them). */
  TENANT_MAX_PIPELINES: z.coerce.number().int().min(1).max(10_000).default(64),
  PIPELINE_MAX_VERSIONS: z.coerce.number().int().min(1).max(100_000).default(100),
  /** Per tenant and API process: uploads being received or awaited at once (429 past it). */
  TENANT_MAX_UPLOADS_IN_FLIGHT: z.coerce.number().int().min(1).default(64),
  /** Per tenant, all replicas: tus, direct and Uppy sessions not yet committed (429 past it). */
  TENANT_MAX_OPEN_SESSIONS: z.coerce.number().int().min(1).max(1_000_000).default(256),
  WEBHOOK_TIMEOUT_SECONDS: z.coerce.number().positive().default(15),
  /**
   * Where clamd listens, for scan.clamav steps: `tcp://host:port` or a unix socket path.
   * Unset: no scanner, and every scan's verdict is `not_scanned`.
   */
  CLAMD_ADDRESS: z
    .string()
    .regex(/^(tcp:\/\/[^:/\s]+:\d{1,5}|\/\S+)$/, 'CLAMD_ADDRESS is tcp://host:port or an absolute unix socket path')
    .optional(),
  /** A scan taking longer than this (connecting and streaming) counts as the scanner being down. */
  CLAMD_TIMEOUT_SECONDS: z.coerce.number().positive().default(60),
  /** clamd's StreamMaxLength (its default, 25 MiB): larger files are not_scanned without a try. */
  CLAMD_MAX_BYTES: z.coerce
    .number()
    .int()
    .min(1)
    .default(25 * 1024 * 1024),
  WEBHOOK_RETRY_INITIAL_SECONDS: z.coerce.number().positive().default(5),
  WEBHOOK_RETRY_COEFFICIENT: z.coerce.number().min(1).default(6),
  WEBHOOK_RETRY_MAX_INTERVAL_SECONDS: z.coerce.number().positive().default(36_000),
  WEBHOOK_RETRY_MAX_ATTEMPTS: z.coerce.number().int().min(1).default(8),
  /** Process memory for recently replayed answers (immutable while their key lives); 0 turns it off. */
  REPLAY_CACHE_MIB: z.coerce.number().min(0).max(1024).default(16),
  /** How long webhook events and their attempts are kept (GET /v1/events, redelivery). */
  EVENT_RETENTION_DAYS: z.coerce.number().positive().max(3650).default(30),
  /** How often the expire-uploads Schedule starts the deletion of uploads past their expiresAt or tenant retention. */
  RETENTION_SWEEP_SECONDS: z.coerce.number().int().min(1).max(86400).default(60),
  /** How long another process may replay a deleted upload's original answer from its cache. */
  REPLAY_CACHE_SECONDS: z.coerce.number().positive().max(3600).default(30),
  IDEMPOTENCY_TTL_HOURS: z.coerce.number().positive().default(24),
  /** After the TTL, how long a compact tombstone still answers `idempotency_key_expired`. */
  TOMBSTONE_TTL_HOURS: z.coerce
    .number()
    .positive()
    .default(24 * 7),
  /** Attempt objects no upload references are removed once older than this. */
  STAGING_GRACE_SECONDS: z.coerce
    .number()
    .min(0)
    .default(2 * 3600),
  MULTIPART_MAX_AGE_SECONDS: z.coerce.number().min(0).default(86_400),
  /** When set, the worker exports the Temporal SDK's metrics for Prometheus on this port. */
  WORKER_METRICS_PORT: z.coerce.number().int().min(1).max(65535).optional(),
  /** Worker role: /healthz, /readyz and /metrics (Oncely's own) on this port of HOST; 0 takes a free one (logged). */
  WORKER_HTTP_PORT: z.coerce.number().int().min(0).max(65535).default(9091),
  /**
   * The operator port of any role: /healthz, /readyz and /metrics on this port of HOST and
   * nowhere else (the API's public port then answers them 404). Unset: the API serves them on
   * PORT, a worker on WORKER_HTTP_PORT.
   */
  OPS_PORT: z.coerce.number().int().min(0).max(65535).optional(),
  /**
   * 32 random bytes, base64: seals secrets at rest (answers holding new API keys or webhook
   * secrets; endpoints' signing secrets). Unset: generated once under DATA_DIR (fine for one
   * node; every API and worker process must share one).
   */
  SECRETS_KEY: optionalString.refine((v) => v === undefined || Buffer.from(v, 'base64').length === 32, 'must be 32 bytes, base64-encoded'),
  /**
   * Seal every payload handed to Temporal (inputs, results, update arguments and answers,
   * failure details) under data keys kept in PostgreSQL and wrapped by SECRETS_KEY; an
   * upload's erasure destroys its keys (src/temporal/payload-codec.ts).
   */
  PAYLOAD_ENCRYPTION: bool.default(true),
  /**
   * Keys SECRETS_KEY replaced (base64, comma-separated): what was sealed under them still
   * opens. `oncely secrets-key rotate` re-wraps the payload data keys under SECRETS_KEY.
   */
  SECRETS_KEY_PREVIOUS: optionalString
    .transform((v) => (v ? v.split(',').map((k) => k.trim()) : []))
    .refine((keys) => keys.every((k) => Buffer.from(k, 'base64').length === 32), 'each must be 32 bytes, base64-encoded'),
  /** Bearer token for the operator routes (/admin/*: tenant creation). Unset: they answer 404. */
  ADMIN_TOKEN: optionalString.refine((v) => v === undefined || v.length >= 24, 'must be at least 24 characters'),
  /** Create the housekeeping Schedules at worker start. */
  HOUSEKEEPING_SCHEDULES: bool.default(true),
  /**
   * Worker role: bound every call into the workflow sandbox by the SDK's own watchdog (a thread
   * per call, ~130 µs of CPU each). Off by default: calls run unbounded and one still running
   * after WORKFLOW_SANDBOX_CALL_LIMIT_SECONDS makes the process exit (src/temporal/workflow-thread.ts).
   */
  WORKFLOW_SANDBOX_WATCHDOG: bool.default(false),
  WORKFLOW_SANDBOX_CALL_LIMIT_SECONDS: z.coerce.number().int().min(1).max(3600).default(30),
  /** Worker role: JSON of WorkerOptions to override, e.g. `{"maxConcurrentWorkflowTaskExecutions":10}`. */
  WORKER_TUNING: optionalString.transform((v, ctx) => {
    if (v === undefined) return {};
    let json: unknown;
    try {
      json = JSON.parse(v);
    } catch {
      ctx.addIssue({ code: 'custom', message: 'must be a JSON object' });
      return z.NEVER;
    }
    const parsed = workerTuning.safeParse(json);
    if (!parsed.success) {
      for (const issue of parsed.error.issues)
        ctx.addIssue({ code: 'custom', message: `${issue.path.join('.') || '(root)'}: ${issue.message}` });
      return z.NEVER;
    }
    return parsed.data;
  }),
  /** Worker role: the task queues this process polls (uploads, transcode, or both). */
  WORKER_QUEUES: commaList('uploads,transcode').pipe(
    z.array(z.enum(['uploads', 'transcode'])).min(1, 'name at least one of uploads, transcode'),
  ),
});

export type Config = z.infer<typeof configSchema>;

/** The settings that hold secrets: each may come from a file instead (`NAME_FILE`: Docker and Kubernetes secrets). */
export const SECRET_SETTINGS = [
  'DATABASE_URL',
  'S3_ACCESS_KEY_ID',
  'S3_SECRET_ACCESS_KEY',
  'SECRETS_KEY',
  'SECRETS_KEY_PREVIOUS',
  'ADMIN_TOKEN',
] as const;

/** The environment with each secret's `NAME_FILE` read into `NAME` (its content, less a trailing newline). */
function withSecretFiles(env: Record<string, string | undefined>): { env: Record<string, string | undefined>; problems: string[] } {
  const out = { ...env };
  const problems: string[] = [];
  for (const name of SECRET_SETTINGS) {
    const file = env[`${name}_FILE`];
    if (file === undefined || file === '') continue;
    if (env[name] !== undefined && env[name] !== '') {
      problems.push(`  ${name}_FILE: give ${name} or ${name}_FILE, not both`);
      continue;
    }
    try {
      out[name] = readFileSync(file, 'utf8').replace(/\r?\n$/, '');
    } catch (err) {
      problems.push(`  ${name}_FILE: cannot read ${file} (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
    }
  }
  return { env: out, problems };
}

export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  const files = withSecretFiles(env);
  const parsed = configSchema.safeParse(files.env);
  const lines = [...files.problems, ...(parsed.success ? [] : parsed.error.issues.map((i) => `  ${i.path.join('.')}: ${i.message}`))];
  if (lines.length || !parsed.success) throw new Error(`invalid configuration:\n${lines.join('\n')}`);
  return parsed.data;
}
