// What a split role (`api`, `worker`) needs configured before it starts: its own database,
// object store, Temporal and SECRETS_KEY, shared with every other process. The embedded parts
// (PGlite, the local-directory store, the dev server, a key generated under DATA_DIR) stand in
// for them only in the embedded default (role `all`) or when named in EMBEDDED, so a replica
// never runs a private stack by mistake; and only where they are shipped: the production
// image leaves PGlite and the dev server out (scripts/prune-runtime.sh), so there even role
// `all` needs DATABASE_URL and TEMPORAL_ADDRESS.
import { existsSync } from 'node:fs';
import type { Config } from './config';
import { toolsScript } from './paths';
import type { Role } from './runtime';

type Part = Config['EMBEDDED'][number];
const EMBEDDED_NAMES: Record<Part, string> = {
  database: 'database (PGlite)',
  store: 'store',
  temporal: 'Temporal dev server',
  secrets: 'secrets',
};

const NEEDS: { part: Part; setting: (c: Config) => unknown; line: string }[] = [
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

/** The embedded parts this installation carries: PGlite when its package is installed, the dev server when the tools script that builds it is. */
export function shippedParts(): Set<Part> {
  const parts = new Set<Part>(['store', 'secrets']);
  try {
    import.meta.resolve('@electric-sql/pglite');
    parts.add('database');
  } catch {
    // Not installed: the production image.
  }
  if (existsSync(toolsScript)) parts.add('temporal');
  return parts;
}

/**
 * One line per setting `role` lacks: for a split role, each not named in EMBEDDED; for the
 * embedded default, each whose embedded part is not shipped here.
 */
export function missingSettings(config: Config, role: Role, shipped: Set<Part> = shippedParts()): string[] {
  return NEEDS.filter((n) => !n.setting(config)).flatMap((n) => {
    const standsIn = role === 'all' || config.EMBEDDED.includes(n.part);
    if (standsIn && shipped.has(n.part)) return [];
    if (standsIn)
      return [
        `${n.line.split(':')[0]}: this installation does not ship the embedded ${EMBEDDED_NAMES[n.part]} (the production image leaves the development stack out)`,
      ];
    return [n.line];
  });
}
