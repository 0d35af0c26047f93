// docker-compose.yml cannot run here (no Docker engine), so check what `docker compose
// config` would: it parses, every dependency names a service with the needed condition,
// and every Oncely setting it passes is one the config schema knows.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';
import { configSchema, loadConfig } from '../../src/config';

const root = path.resolve(import.meta.dirname, '../..');
const compose = parse(readFileSync(path.join(root, 'docker-compose.yml'), 'utf8'), { merge: true });

describe('docker-compose.yml', () => {
  it('has the production-shaped services', () => {
    expect(Object.keys(compose.services).sort()).toEqual(['api', 'migrate', 'postgres', 's3', 'temporal', 'temporal-setup', 'temporal-ui', 'worker']);
  });

  it('depends only on defined services, with healthchecks where health is awaited', () => {
    for (const [name, svc] of Object.entries<any>(compose.services)) {
      for (const [dep, cond] of Object.entries<any>(svc.depends_on ?? {})) {
        expect(compose.services[dep], `${name} → ${dep}`).toBeDefined();
        expect(['service_healthy', 'service_completed_successfully', 'service_started']).toContain(cond.condition);
        if (cond.condition === 'service_healthy') expect(compose.services[dep].healthcheck, `${dep} healthcheck`).toBeDefined();
      }
    }
  });

  it('passes the app a configuration the schema accepts, with every key known', () => {
    const known = new Set(Object.keys(configSchema.shape));
    for (const role of ['api', 'worker', 'migrate']) {
      const env = compose.services[role].environment;
      for (const k of Object.keys(env)) expect(known.has(k), `${role}: ${k}`).toBe(true);
      expect(() => loadConfig(env)).not.toThrow();
    }
    expect(compose.services.api.command).toEqual(['api']);
    expect(compose.services.worker.command).toEqual(['worker']);
  });

  it('registers the search attributes the code defines', async () => {
    const { searchAttributes } = await import('../../src/temporal/names');
    const setup = compose.services['temporal-setup'].command.join(' ');
    for (const key of Object.values(searchAttributes)) expect(setup).toContain(`--name ${key.name}`);
  });
});
