// What a split role (`api`, `worker`) needs configured before it starts: its own database,
// object store, Temporal and SECRETS_KEY, shared with every other process. The embedded parts
// (PGlite, the local-directory store, the dev server, a key generated under DATA_DIR) stand in
// for them only in the embedded default (role `all`) or when named in EMBEDDED, so a replica
// never runs a private stack by mistake.
import type { Config } from './config';
import type { Role } from './runtime';

const NEEDS: { part: Config['EMBEDDED'][number]; setting: (c: Config) => unknown; line: string }[] = [
  {
    part: 'database',
    setting: (c) => c.DATABASE_URL,
    line: 'DATABASE_URL is not set: the PostgreSQL database every process shares (EMBEDDED=database runs a throwaway PGlite instead)',
  },
  {
    part: 'store',
    setting: (c) => c.S3_ENDPOINT,
    line: 'S3_ENDPOINT is not set: the object store every process shares (EMBEDDED=store keeps objects under DATA_DIR, one machine only)',
  },
  {
    part: 'temporal',
    setting: (c) => c.TEMPORAL_ADDRESS,
    line: 'TEMPORAL_ADDRESS is not set: the Temporal frontend, host:port (EMBEDDED=temporal starts a dev server of its own)',
  },
  {
    part: 'secrets',
    setting: (c) => c.SECRETS_KEY,
    line: 'SECRETS_KEY is not set: 32 bytes, base64 (openssl rand -base64 32), the same for every API and worker (EMBEDDED=secrets generates one under DATA_DIR)',
  },
];

/** One line per setting `role` lacks (none for the embedded default). */
export function missingSettings(config: Config, role: Role): string[] {
  if (role === 'all') return [];
  return NEEDS.filter((n) => !n.setting(config) && !config.EMBEDDED.includes(n.part)).map((n) => n.line);
}
