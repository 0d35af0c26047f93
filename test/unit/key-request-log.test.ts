// The key request log's buffer at its own level: one statement per flush with every buffered
// request, nothing written when nothing came, a refused batch dropped and counted (the next
// one written), a full buffer counted, and close() writing what is left.
import { describe, expect, it } from 'vitest';
import pino from 'pino';
import type { Pool } from '../../src/db/pool';
import type { KeyRequest } from '../../src/db/queries/key-requests';
import { KeyRequestLog } from '../../src/http/key-request-log';
import { metrics } from '../../src/metrics';

const request = (i: number): KeyRequest => ({
  tenantId: '11111111-1111-4111-8111-111111111111',
  idempotencyKey: `k-${i % 2}`,
  at: new Date(),
  requestId: `r-${i}`,
  method: 'POST',
  route: '/v1/uploads',
  status: 201,
  outcome: 'replayed',
});

function fakePool(fail: () => boolean) {
  const statements: unknown[][] = [];
  const pool = {
    query: async (_sql: string, values: unknown[]) => {
      if (fail()) throw new Error('connection refused');
      statements.push(values);
      return { rows: [], rowCount: 0 };
    },
  } as unknown as Pool;
  return { pool, statements };
}

const dropped = async () => (await metrics.keyRequestsDropped.get()).values[0]?.value ?? 0;

describe('KeyRequestLog', () => {
  it('writes every buffered request in one statement, and nothing when nothing came', async () => {
    const { pool, statements } = fakePool(() => false);
    const log = new KeyRequestLog({ pool, log: pino({ level: 'silent' }), intervalMs: 60_000 });
    await log.flush();
    expect(statements).toHaveLength(0);
    for (let i = 0; i < 5; i++) log.note(request(i));
    await log.flush();
    expect(statements).toHaveLength(1);
    expect(statements[0]![3]).toEqual(['r-0', 'r-1', 'r-2', 'r-3', 'r-4']);
    await log.close();
  });

  it('drops and counts a batch the database refuses, then writes the next; close() writes what is left', async () => {
    let refuse = true;
    const { pool, statements } = fakePool(() => refuse);
    const log = new KeyRequestLog({ pool, log: pino({ level: 'silent' }), intervalMs: 60_000 });
    const before = await dropped();
    log.note(request(0));
    log.note(request(1));
    await log.flush();
    expect((await dropped()) - before).toBe(2);
    refuse = false;
    log.note(request(2));
    await log.close();
    expect(statements.map((s) => s[3])).toEqual([['r-2']]);
  });

  it('counts what comes past a full buffer instead of growing without bound', async () => {
    const { pool, statements } = fakePool(() => false);
    const log = new KeyRequestLog({ pool, log: pino({ level: 'silent' }), intervalMs: 60_000, maxBuffered: 3 });
    const before = await dropped();
    for (let i = 0; i < 5; i++) log.note(request(i));
    expect((await dropped()) - before).toBe(2);
    await log.close();
    expect(statements[0]![3]).toEqual(['r-0', 'r-1', 'r-2']);
  });
});
