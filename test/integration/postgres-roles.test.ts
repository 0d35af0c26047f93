// The compose file's PostgreSQL init script (deploy/postgres-init/10-roles.sh), run as the
// postgres image runs it, against the machine's real server: Oncely's role owns its database
// and may do nothing else; Temporal's may create databases; neither is a superuser; nobody
// else may connect to Oncely's database.
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { afterAll, expect, inject, it } from 'vitest';

const root = path.resolve(import.meta.dirname, '../..');
const suffix = randomBytes(4).toString('hex');
const oncely = `oncely_roles_${suffix}`;
const temporal = `temporal_roles_${suffix}`;
const scratch = `temporal_made_${suffix}`;
const admin = new URL(inject('stack').pgAdminUrl);

const as = (user: string, database: string) =>
  new pg.Client({ host: admin.hostname, port: Number(admin.port || 5432), user, password: 'unused-with-trust-auth', database });

async function query(user: string, database: string, sql: string) {
  const client = as(user, database);
  await client.connect();
  try {
    return await client.query(sql);
  } finally {
    await client.end();
  }
}

afterAll(async () => {
  const superuser = decodeURIComponent(admin.username) || 'postgres';
  for (const sql of [
    `DROP DATABASE IF EXISTS "${oncely}" WITH (FORCE)`,
    `DROP DATABASE IF EXISTS "${scratch}" WITH (FORCE)`,
    `DROP ROLE IF EXISTS "${oncely}"`,
    `DROP ROLE IF EXISTS "${temporal}"`,
  ])
    await query(superuser, 'postgres', sql).catch(() => {});
});

it('creates a least-privilege role per service', async () => {
  const superuser = decodeURIComponent(admin.username) || 'postgres';
  await promisify(execFile)('sh', [path.join(root, 'deploy/postgres-init/10-roles.sh')], {
    env: {
      ...process.env,
      PGHOST: admin.hostname,
      PGPORT: admin.port || '5432',
      POSTGRES_USER: superuser,
      ONCELY_DB_USER: oncely,
      ONCELY_DB_PASSWORD: 'oncely-secret',
      TEMPORAL_DB_USER: temporal,
      TEMPORAL_DB_PASSWORD: 'temporal-secret',
    },
  });

  const roles = await query(
    superuser,
    'postgres',
    `SELECT rolname, rolsuper, rolcreatedb, rolcreaterole, rolcanlogin FROM pg_roles WHERE rolname IN ('${oncely}', '${temporal}') ORDER BY rolname`,
  );
  expect(roles.rows).toEqual([
    { rolname: oncely, rolsuper: false, rolcreatedb: false, rolcreaterole: false, rolcanlogin: true },
    { rolname: temporal, rolsuper: false, rolcreatedb: true, rolcreaterole: false, rolcanlogin: true },
  ]);

  // Oncely's role owns its database: its migrations create and use tables there.
  await query(oncely, oncely, 'CREATE TABLE owned (id int PRIMARY KEY); INSERT INTO owned VALUES (1)');
  expect((await query(oncely, oncely, 'SELECT count(*)::int AS n FROM owned')).rows[0].n).toBe(1);
  // ...and nothing beyond it.
  await expect(query(oncely, oncely, `CREATE DATABASE "${scratch}"`)).rejects.toThrow(/permission denied/);
  await expect(query(oncely, oncely, `CREATE ROLE "x_${suffix}"`)).rejects.toThrow(/permission denied/);

  // Temporal's role creates its databases (its SQL tool's `create`), and cannot enter Oncely's.
  await query(temporal, 'postgres', `CREATE DATABASE "${scratch}"`);
  await query(temporal, scratch, 'CREATE TABLE executions (id int)');
  await expect(query(temporal, oncely, 'SELECT 1')).rejects.toThrow(/permission denied for database/);
  // Oncely's role reads nothing of Temporal's.
  await expect(query(oncely, scratch, 'SELECT * FROM executions')).rejects.toThrow(/permission denied/);
});
