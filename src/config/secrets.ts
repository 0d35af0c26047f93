// Secrets. The keys that seal what is kept, and the operator token; each may come from a file (`NAME_FILE`).
// docs/CONFIGURATION.md is generated from these comments (npm run docs:config).
import { bool, optionalString } from './values';

export const secretSettings = {
  /**
   * 32 random bytes, base64 (`openssl rand -base64 32`): seals stored answers that hold secrets and
   * webhook signing secrets. Every API and worker process must share one.
   * @default unset: generated once into `DATA_DIR/secrets-key`
   */
  SECRETS_KEY: optionalString.refine((v) => v === undefined || Buffer.from(v, 'base64').length === 32, 'must be 32 bytes, base64-encoded'),
  /**
   * Keys `SECRETS_KEY` replaced (base64, comma-separated): what they sealed still opens; `oncely
   * secrets-key rotate` re-wraps the payload data keys under the new one.
   */
  SECRETS_KEY_PREVIOUS: optionalString
    .transform((v) => (v ? v.split(',').map((k) => k.trim()) : []))
    .refine((keys) => keys.every((k) => Buffer.from(k, 'base64').length === 32), 'each must be 32 bytes, base64-encoded'),
  /**
   * Seal every payload handed to Temporal under data keys in PostgreSQL (an upload's are destroyed
   * with it).
   */
  PAYLOAD_ENCRYPTION: bool.default(true),
  /**
   * Bearer token (≥ 24 characters) for `/admin/tenants` (create, read, change, delete) and the codec
   * server `/codec/*`.
   * @default unset: operator routes answer 404
   */
  ADMIN_TOKEN: optionalString.refine((v) => v === undefined || v.length >= 24, 'must be at least 24 characters'),
};
