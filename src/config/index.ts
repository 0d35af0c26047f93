// Configuration is parsed once, from the environment, with zod. Everything else receives
// the typed object; nothing reads process.env directly. The settings are grouped by area, one
// module each; docs/CONFIGURATION.md is generated from them (npm run docs:config).
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { serverSettings } from './server';
import { storeSettings } from './stores';
import { temporalSettings } from './temporal';
import { uploadSettings } from './uploads';
import { processingSettings } from './processing';
import { outboundSettings } from './outbound';
import { quotaSettings } from './quotas';
import { secretSettings } from './secrets';
import { wingSettings } from '../wings-vocabulary';

export const configSchema = z.object({
  ...serverSettings,
  ...storeSettings,
  ...temporalSettings,
  ...uploadSettings,
  ...processingSettings,
  ...outboundSettings,
  ...quotaSettings,
  ...secretSettings,
  ...wingSettings,
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
