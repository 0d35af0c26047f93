// The embedded default database: PGlite (Postgres compiled to WASM) persisted in a
// directory and served over the Postgres wire protocol, so the same `pg` code runs.
import { PGlite } from '@electric-sql/pglite';
import { PGLiteSocketServer } from '@electric-sql/pglite-socket';
import { mkdirSync } from 'node:fs';
import { createPool, type Pool } from '../db/pool';
import { reportMemory } from '../metrics';
import { holdingEventLoop } from '../event-loop-hold';

/**
 * Connections a process opens to the embedded database. PGlite is one backend session;
 * its socket server interleaves the protocol messages of concurrent connections and,
 * with several connections running transactions at once, stalls for good (measured: 40
 * mixed transactions over 10 connections never finish). One connection makes `pg`'s pool
 * queue the work instead. No code awaits a second connection inside a transaction, so
 * one is enough.
 */
const EMBEDDED_POOL_SIZE = 1;

/**
 * The pool for the embedded database: one connection, and a long bound on waiting for it,
 * since queueing is the point (the database runs in this process; it is never unreachable).
 */
export function createEmbeddedPool(url: string): Pool {
  return createPool(url, EMBEDDED_POOL_SIZE, { connectionTimeoutMs: 60_000 });
}

export interface EmbeddedPostgres {
  url: string;
  stop(): Promise<void>;
}

export async function startPglite(dir: string, port: number): Promise<EmbeddedPostgres> {
  mkdirSync(dir, { recursive: true });
  // Postgres's default 128 MB of shared buffers grows PGlite's WebAssembly memory from its
  // 128 MiB floor to 189 MiB, all of it kept for the process's life; an embedded database
  // is small, and 16 MB of buffers keeps it at the floor (bench/HISTORY.md, embedded memory).
  // PGlite compiles its 9 MB WebAssembly module with nothing else open: every process that
  // opens it (a role's start, a CLI command) holds the loop across it.
  const db = await holdingEventLoop(() => PGlite.create(dir, { startParams: [...PGlite.defaultStartParams, '-c', 'shared_buffers=16MB'] }));
  reportMemory('pglite_wasm', () => (db as unknown as { Module?: { HEAPU8?: Uint8Array } }).Module?.HEAPU8?.byteLength ?? 0);
  const server = new PGLiteSocketServer({ db, host: '127.0.0.1', port, maxConnections: 32 });
  await server.start();
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres?sslmode=disable`,
    async stop() {
      await server.stop();
      await db.close();
    },
  };
}
