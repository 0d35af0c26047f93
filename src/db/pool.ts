// The Postgres pool and the two ways to borrow from it. Callers never release or roll
// back by hand: withClient/withTransaction do it, so neither can be forgotten.
import pg from 'pg';

export type Pool = pg.Pool;
export type Queryable = Pick<pg.PoolClient, 'query'>;

export function createPool(connectionString: string, max = 10, opts: { connectionTimeoutMs?: number } = {}): Pool {
  const pool = new pg.Pool({
    connectionString,
    max,
    // Fail fast when the database is unreachable so the API can answer 503 promptly. (It
    // also bounds a request's wait for a free connection.)
    connectionTimeoutMillis: opts.connectionTimeoutMs ?? 5_000,
    idleTimeoutMillis: 30_000,
  });
  // An idle client losing its connection must not crash the process; the next query
  // gets a fresh connection (or a clear error).
  pool.on('error', () => {});
  return pool;
}

/** Answers when the database does: the readiness check's and the CLI's probe. */
export async function pingDatabase(db: Queryable): Promise<void> {
  await db.query('SELECT 1');
}

export async function withClient<T>(pool: Pool, fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  try {
    return await fn(client);
  } finally {
    client.release();
  }
}

export async function withTransaction<T>(pool: Pool, fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  return withClient(pool, async (client) => {
    await client.query('BEGIN');
    try {
      const result = await fn(client);
      await client.query('COMMIT');
      return result;
    } catch (err) {
      await client.query('ROLLBACK').catch(() => {}); // a broken connection rolls back by itself
      throw err;
    }
  });
}

/**
 * Named (server-side prepared) statements save a parse and plan on hot queries. They are
 * off for the embedded PGlite, where every socket shares one backend session and
 * statement names would collide between connections.
 */
let preparedStatements = true;

export function usePreparedStatements(on: boolean): void {
  preparedStatements = on;
}

export function statement(name: string, text: string, values: unknown[]): pg.QueryConfig {
  return preparedStatements ? { name, text, values } : { text, values };
}
