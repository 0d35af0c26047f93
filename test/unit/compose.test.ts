// docker-compose.yml cannot run here (no Docker engine), so check what `docker compose
// config` would: it parses and interpolates (secrets required from the environment), every
// dependency names a service with the needed condition, every Oncely setting it passes is
// one the config schema knows, and the production rules hold: Temporal's maintained server
// image with its schema set up by admin-tools, no UI or database published beyond loopback,
// pinned images, rotated logs, memory limits, a database role per service.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';
import { configSchema, loadConfig } from '../../src/config';
import { missingSettings } from '../../src/role-settings';

const root = path.resolve(import.meta.dirname, '../..');
const text = readFileSync(path.join(root, 'docker-compose.yml'), 'utf8');
const SECRETS = {
  POSTGRES_PASSWORD: 'pg-password-from-env',
  ONCELY_DB_PASSWORD: 'oncely-role-password-from-env',
  TEMPORAL_DB_PASSWORD: 'temporal-role-password-from-env',
  S3_SECRET_ACCESS_KEY: 's3-secret-from-env',
  SECRETS_KEY: Buffer.alloc(32, 7).toString('base64'),
  ADMIN_TOKEN: 'operator-token-from-the-environment',
};

/** Compose's interpolation: ${VAR}, ${VAR:-default}, ${VAR:?error} (empty counts as unset), $$. */
function interpolate(value: string, env: Record<string, string>): string {
  return value.replace(
    /\$\$|\$\{(\w+)(?::([-?])([^}]*))?\}/g,
    (whole, name: string | undefined, op: string | undefined, arg: string | undefined) => {
      if (whole === '$$') return '$';
      const v = env[name!];
      if (v) return v;
      if (op === '?') throw new Error(`required variable ${name} is missing: ${arg}`);
      return op === '-' ? arg! : '';
    },
  );
}

function load(env: Record<string, string>) {
  const walk = (v: unknown): unknown =>
    typeof v === 'string'
      ? interpolate(v, env)
      : Array.isArray(v)
        ? v.map(walk)
        : v && typeof v === 'object'
          ? Object.fromEntries(Object.entries(v).map(([k, x]) => [k, walk(x)]))
          : v;
  return walk(parse(text, { merge: true })) as { services: Record<string, any> };
}

const compose = load(SECRETS);

describe('docker-compose.yml', () => {
  it('has the production-shaped services', () => {
    expect(Object.keys(compose.services).sort()).toEqual([
      'api',
      'clamd',
      'jaeger',
      'migrate',
      'postgres',
      's3',
      'temporal',
      'temporal-schema',
      'temporal-setup',
      'temporal-ui',
      'transcode-worker',
      'worker',
    ]);
  });

  it('restarts every long-running service and checks its health; one-shots run once', () => {
    const oneShots = ['migrate', 'temporal-schema', 'temporal-setup'];
    for (const [name, svc] of Object.entries<any>(compose.services)) {
      if (oneShots.includes(name)) {
        expect(svc.restart, name).toBe('no');
        continue;
      }
      expect(svc.restart, name).toBe('unless-stopped');
      expect(svc.healthcheck?.test, `${name} healthcheck`).toBeDefined();
    }
    for (const role of ['api', 'worker', 'transcode-worker'])
      expect(compose.services[role].healthcheck.test).toEqual(['CMD', 'node', '/app/bin/oncely-healthcheck']);
  });

  it('builds the app image once (migrate) and runs each Oncely role from the image that has what it needs', () => {
    expect(compose.services.migrate.build.target).toBe('app');
    for (const role of ['api', 'worker']) {
      expect(compose.services[role].build, role).toBeUndefined();
      expect(compose.services[role].image, role).toBe(compose.services.migrate.image);
    }
    expect(compose.services['transcode-worker'].build.target).toBe('transcode');
    expect(compose.services.worker.environment.WORKER_QUEUES).toBe('uploads');
    expect(compose.services['transcode-worker'].environment.WORKER_QUEUES).toBe('transcode');
    expect(compose.services['transcode-worker'].environment.CLAMD_ADDRESS).toBe('tcp://clamd:3310');
  });

  it('the Dockerfile: app is the default target, the base is the Node the project tests, tini is PID 1, the user unprivileged', () => {
    const dockerfile = readFileSync(path.join(root, 'Dockerfile'), 'utf8');
    const stages = [...dockerfile.matchAll(/^FROM (\S+) AS (\S+)$/gm)].map((m) => ({ from: m[1], name: m[2] }));
    expect(stages.at(-1)!.name).toBe('app');
    expect(stages.map((s) => s.name).sort()).toEqual(['app', 'build', 'runtime', 'transcode']);
    const nodeVersion = /^NODE_VERSION=(\S+)$/m.exec(readFileSync(path.join(root, 'scripts/node.sh'), 'utf8'))![1];
    expect(dockerfile).toMatch(new RegExp(`^ARG NODE_IMAGE=node:${nodeVersion!.replaceAll('.', '\\.')}-bookworm-slim$`, 'm'));
    expect(stages.find((s) => s.name === 'build')!.from).toBe('${NODE_IMAGE}');
    expect(stages.find((s) => s.name === 'runtime')!.from).toBe('${NODE_IMAGE}');
    for (const role of ['app', 'transcode']) expect(stages.find((s) => s.name === role)!.from, role).toBe('runtime');
    expect(dockerfile).toMatch(/^ENTRYPOINT \["\/usr\/bin\/tini", "--", "\/app\/bin\/oncely-node"\]$/m);
    expect(dockerfile).toMatch(/^USER node$/m);
    expect(dockerfile).toMatch(/^HEALTHCHECK /m);
    expect(dockerfile).toMatch(/npm ci --omit=dev/);
  });

  it('pins every image to a full version, rotates every log and limits every memory', () => {
    for (const [name, svc] of Object.entries<any>(compose.services)) {
      // PostgreSQL's versions are major.minor; everything else's major.minor.patch.
      const full = name === 'postgres' ? /:\d+\.\d+-bookworm$/ : /:v?\d+\.\d+\.\d+$/;
      if (svc.image && !svc.image.startsWith('oncely')) expect(svc.image, name).toMatch(full);
      expect(svc.logging, name).toEqual({ driver: 'json-file', options: { 'max-size': '10m', 'max-file': '5' } });
      expect(svc.mem_limit, name).toMatch(/^\d+[mg]$/);
    }
  });

  it('puts no secret on a command line', () => {
    for (const [name, svc] of Object.entries<any>(compose.services)) {
      const line = [...(svc.entrypoint ?? []), ...(Array.isArray(svc.command) ? svc.command : [svc.command ?? ''])].join(' ');
      for (const secret of Object.values(SECRETS)) expect(line, name).not.toContain(secret);
    }
    expect(compose.services.s3.environment).toEqual({ ROOT_ACCESS_KEY_ID: 'oncely', ROOT_SECRET_ACCESS_KEY: SECRETS.S3_SECRET_ACCESS_KEY });
  });

  it('gives Oncely and Temporal database roles of their own; only the operator has the superuser', () => {
    const pg = compose.services.postgres;
    expect(pg.environment.POSTGRES_USER).toBe('postgres');
    expect(pg.volumes).toContain('./deploy/postgres-init:/docker-entrypoint-initdb.d:ro');
    expect(loadConfig(compose.services.api.environment).DATABASE_URL).toBe(
      `postgres://oncely:${SECRETS.ONCELY_DB_PASSWORD}@postgres:5432/oncely`,
    );
    expect(compose.services['temporal-schema'].environment).toMatchObject({
      SQL_USER: 'temporal',
      SQL_PASSWORD: SECRETS.TEMPORAL_DB_PASSWORD,
    });
    expect(compose.services.temporal.environment).toMatchObject({ POSTGRES_USER: 'temporal', POSTGRES_PWD: SECRETS.TEMPORAL_DB_PASSWORD });
    expect(text).not.toMatch(/POSTGRES_PASSWORD.*@postgres/);
  });

  it('.env.example names every variable the file reads', () => {
    const example = readFileSync(path.join(root, '.env.example'), 'utf8');
    const listed = new Set([...example.matchAll(/^#?\s*([A-Z][A-Z0-9_]*)=/gm)].map((m) => m[1]));
    const used = new Set([...text.matchAll(/\$\{(\w+)/g)].map((m) => m[1]));
    expect(used.size).toBeGreaterThan(3);
    for (const name of used) expect(listed.has(name), name).toBe(true);
  });

  it("runs Temporal's server image (not the deprecated auto-setup) with its schema set up by the admin tools of the same version", () => {
    expect(text).not.toContain('auto-setup');
    const server = compose.services.temporal.image as string;
    expect(server).toMatch(/^temporalio\/server:\d+\.\d+\.\d+$/);
    const version = server.split(':')[1];
    for (const svc of ['temporal-schema', 'temporal-setup']) expect(compose.services[svc].image).toBe(`temporalio/admin-tools:${version}`);
    const schema = compose.services['temporal-schema'].command.join('\n');
    for (const db of ['temporal', 'temporal_visibility']) {
      expect(schema).toContain(`--db ${db} setup-schema`);
      expect(schema).toMatch(new RegExp(`--db ${db} update-schema -d /etc/temporal/schema/postgresql/v12/`));
    }
    expect(compose.services.temporal.depends_on['temporal-schema'].condition).toBe('service_completed_successfully');
    expect(compose.services.temporal.environment.NUM_HISTORY_SHARDS).toBe('4');
  });

  it('publishes only the API on all interfaces, its health and metrics on the unpublished operator port; the UI (no login) on loopback only, read-only', () => {
    for (const role of ['api', 'worker', 'transcode-worker', 'migrate'])
      expect(compose.services[role].environment.OPS_PORT, role).toBe('9090');
    expect(compose.services.api.ports).toEqual(['3000:3000']);
    for (const [name, svc] of Object.entries<any>(compose.services)) {
      for (const port of svc.ports ?? []) {
        if (name === 'api') continue;
        expect(String(port), `${name} publishes ${port}`).toMatch(/^127\.0\.0\.1:/);
      }
    }
    expect(compose.services['temporal-ui'].ports).toEqual(['127.0.0.1:8233:8080']);
    expect(compose.services['temporal-ui'].environment.TEMPORAL_DISABLE_WRITE_ACTIONS).toBe('true');
    for (const svc of ['postgres', 'temporal', 's3']) expect(compose.services[svc].ports, svc).toBeUndefined();
  });

  it.each(Object.keys(SECRETS))('refuses to start without %s in the environment, and ships no value for it', (name) => {
    const { [name as keyof typeof SECRETS]: _left, ...rest } = SECRETS;
    expect(() => load(rest)).toThrow(new RegExp(`required variable ${name} is missing`));
    expect(text).not.toMatch(new RegExp(`${name}: (?!\\$\\{${name}:\\?)`));
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

  it('passes the app a configuration the schema accepts, with every key known and the secrets from the environment', () => {
    const known = new Set(Object.keys(configSchema.shape));
    for (const role of ['api', 'worker', 'transcode-worker', 'migrate']) {
      const env = compose.services[role].environment;
      // OTEL_* are OpenTelemetry's own variables, read by its SDK (src/telemetry/tracing.ts).
      for (const k of Object.keys(env)) expect(known.has(k) || k.startsWith('OTEL_'), `${role}: ${k}`).toBe(true);
      const config = loadConfig(env);
      expect(config.SECRETS_KEY).toBe(SECRETS.SECRETS_KEY);
      expect(config.ADMIN_TOKEN).toBe(SECRETS.ADMIN_TOKEN);
      expect(config.DATABASE_URL).toContain(SECRETS.ONCELY_DB_PASSWORD);
      // Nothing a split role needs is missing: no replica runs an embedded part.
      if (role !== 'migrate') expect(missingSettings(config, 'api'), role).toEqual([]);
    }
    expect(compose.services.api.command).toEqual(['api']);
    expect(compose.services.worker.command).toEqual(['worker']);
  });

  it("registers the search attributes in Oncely's migration, after the namespace exists", () => {
    expect(compose.services.migrate.entrypoint).toEqual(['oncely']);
    expect(compose.services.migrate.command).toEqual(['migrate']);
    expect(compose.services.migrate.environment.TEMPORAL_ADDRESS).toBe('temporal:7233');
    expect(compose.services.migrate.depends_on['temporal-setup'].condition).toBe('service_completed_successfully');
    for (const role of ['api', 'worker', 'transcode-worker'])
      expect(compose.services[role].depends_on.migrate.condition, role).toBe('service_completed_successfully');
  });

  it('runs the trace backend only in the traces profile, and traces nothing unless an endpoint is given', () => {
    expect(compose.services.jaeger.profiles).toEqual(['traces']);
    expect(compose.services.jaeger.image).toMatch(/^jaegertracing\/jaeger:2\.\d+\.\d+$/);
    for (const role of ['api', 'worker', 'transcode-worker'])
      expect(compose.services[role].environment.OTEL_EXPORTER_OTLP_ENDPOINT, role).toBe('');
    const traced = load({ ...SECRETS, OTEL_EXPORTER_OTLP_ENDPOINT: 'http://jaeger:4318' });
    for (const role of ['api', 'worker', 'transcode-worker'])
      expect(traced.services[role].environment.OTEL_EXPORTER_OTLP_ENDPOINT, role).toBe('http://jaeger:4318');
  });

  it('the application image runs Node 26', () => {
    expect(readFileSync(path.join(root, 'Dockerfile'), 'utf8')).toMatch(/^ARG NODE_IMAGE=node:26\./m);
  });
});
