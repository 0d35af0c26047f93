// Fresh databases on an existing PostgreSQL server: a migrated template once, then a
// cheap clone per test file (CREATE DATABASE ... TEMPLATE).
import pg from 'pg';
import { createPool } from '../../src/db/pool';
import { migrate } from '../../src/db/migrate';

function withDatabase(url: string, db: string): string {
  const u = new URL(url);
  u.pathname = `/${db}`;
  return u.toString();
}

async function admin<T>(adminUrl: string, fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

const ident = (name: string) => {
  if (!/^[a-z_][a-z0-9_]*$/.test(name)) throw new Error(`bad database name ${name}`);
  return `"${name}"`;
};

export async function createDatabase(adminUrl: string, name: string, template?: string): Promise<string> {
  await admin(adminUrl, async (c) => {
    await c.query(`DROP DATABASE IF EXISTS ${ident(name)} WITH (FORCE)`);
    await c.query(`CREATE DATABASE ${ident(name)}${template ? ` TEMPLATE ${ident(template)}` : ''}`);
  });
  return withDatabase(adminUrl, name);
}

export async function dropDatabase(adminUrl: string, name: string): Promise<void> {
  await admin(adminUrl, (c) => c.query(`DROP DATABASE IF EXISTS ${ident(name)} WITH (FORCE)`));
}

/** Creates `name`, runs the migrations into it, and returns its URL. */
export async function createMigratedDatabase(adminUrl: string, name: string): Promise<string> {
  const url = await createDatabase(adminUrl, name);
  const pool = createPool(url, 2);
  try {
    await migrate(pool);
  } finally {
    await pool.end();
  }
  return url;
}
