// Listening, stopping and logs. Where each role listens, how it starts and stops, and what it logs.
// docs/CONFIGURATION.md is generated from these comments (npm run docs:config).
import { z } from 'zod';
import { optionalString } from './values';

export const serverSettings = {
  /** The address the API (and a worker's operator port) listens on. */
  HOST: z.string().default('127.0.0.1'),
  /** The API's port. */
  PORT: z.coerce.number().int().min(0).max(65535).default(3000),
  /**
   * Where clients reach the API (e.g. `https://uploads.example.com/oncely`): the base of URLs the
   * API hands out for later requests (the embedded store's signed PUTs, the Uppy form URL).
   * @default unset: each request's origin
   */
  PUBLIC_URL: optionalString.refine(
    (v) => v === undefined || (/^https?:\/\//.test(v) && URL.canParse(v) && !/[?#]/.test(v)),
    'must be an http(s) URL without query or fragment',
  ),
  /** Embedded default's data (PGlite, Temporal SQLite, objects, dev key). */
  DATA_DIR: z.string().default('.data'),
  /**
   * A role not serving this long after its process started logs the step it waits for and exits with
   * code 75, so supervisors restart it.
   */
  START_TIMEOUT_SECONDS: z.coerce.number().positive().max(86_400).default(300),
  /**
   * API role: after SIGTERM, `/readyz` answers 503 (`draining`) and every request is still served
   * this long, each answer with `Connection: close`, so a load balancer takes the replica out before
   * the listener closes; then a request on an old connection gets 503 `shutting_down` with `Retry-After`.
   */
  SHUTDOWN_DRAIN_SECONDS: z.coerce.number().min(0).max(600).default(5),
  /**
   * On SIGTERM, the bound on a request still in flight after the drain (the stop takes as long as
   * the longest one, up to this); connections still open then are cut.
   */
  SHUTDOWN_GRACE_SECONDS: z.coerce.number().min(0).default(30),
  /**
   * Any role's operator port: `/healthz`, `/readyz` and `/metrics` on this port of `HOST` and not on
   * the public `PORT` (which answers them 404); a worker's defaults to `WORKER_HTTP_PORT`. Compose:
   * 9090, unpublished.
   */
  OPS_PORT: z.coerce.number().int().min(0).max(65535).optional(),
  /**
   * Worker role: `/healthz`, `/readyz` and `/metrics` (Oncely's own counters: commits, scans,
   * webhooks, deletions) on this port of `HOST`; `0` takes a free port, logged in the `oncely
   * started` line.
   */
  WORKER_HTTP_PORT: z.coerce.number().int().min(0).max(65535).default(9091),
  /**
   * Worker role: export the Temporal SDK's metrics for Prometheus on this port (API metrics are at
   * `/metrics`).
   */
  WORKER_METRICS_PORT: z.coerce.number().int().min(1).max(65535).optional(),
  /** The pino log level. */
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
};
