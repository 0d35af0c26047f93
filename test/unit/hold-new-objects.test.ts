// holdNewObjects at its own level: the upload's row is read only where the bucket can hold,
// and each new object is held only while the upload is.
import { describe, expect, it } from 'vitest';
import type { Queryable } from '../../src/db/pool';
import { holdNewObjects } from '../../src/upload/hold-new-objects';
import type { ObjectStore } from '../../src/storage/store';

function fakes(o: { bucketHolds: boolean; held: boolean }) {
  const queries: string[] = [];
  const holds: [string, boolean][] = [];
  const pool = {
    query: async (sql: string) => {
      queries.push(sql);
      return { rows: o.held ? [{ held: true }] : [], rowCount: o.held ? 1 : 0 };
    },
  } as unknown as Queryable;
  const store = {
    holdsObjects: async () => o.bucketHolds,
    setLegalHold: async (key: string, on: boolean) => (holds.push([key, on]), true),
  } as unknown as ObjectStore;
  return { pool, store, queries, holds };
}

describe('holdNewObjects', () => {
  it('reads nothing and holds nothing where the bucket has no Object Lock', async () => {
    const f = fakes({ bucketHolds: false, held: true });
    await holdNewObjects(f.pool, f.store, 'u1', ['a', 'b']);
    expect(f.queries).toEqual([]);
    expect(f.holds).toEqual([]);
  });

  it('holds every new object of a held upload where the bucket can', async () => {
    const f = fakes({ bucketHolds: true, held: true });
    await holdNewObjects(f.pool, f.store, 'u1', ['a', 'b']);
    expect(f.queries).toHaveLength(1);
    expect(f.holds).toEqual([
      ['a', true],
      ['b', true],
    ]);
  });

  it('holds nothing of an upload not held, and asks nothing for no objects', async () => {
    const f = fakes({ bucketHolds: true, held: false });
    await holdNewObjects(f.pool, f.store, 'u1', ['a']);
    expect(f.holds).toEqual([]);
    await holdNewObjects(f.pool, f.store, 'u1', []);
    expect(f.queries).toHaveLength(1);
  });
});
