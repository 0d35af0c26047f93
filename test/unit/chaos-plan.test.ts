// The chaos run is reproducible by seed: the same seed plans the same uploads (keys,
// sizes, copies) and the same fault order; another seed plans different ones.
import { expect, it } from 'vitest';
import { FAULTS, faultsByKind } from '../../chaos/faults';
import { planUploads } from '../../chaos/load';
import { Rng } from '../../chaos/rng';

const shape = (seed: number) =>
  planUploads(new Rng(seed).fork(1), 50, `seed${seed}`).map((p) => ({
    key: p.key,
    bytes: p.bytes,
    type: p.contentType,
    copies: p.copies,
    resend: p.resend,
    misuse: p.misuse,
    body: p.bodySeed.bytes(16).toString('hex'),
  }));

it('plans the same uploads for the same seed, and different ones for another', () => {
  expect(shape(7)).toEqual(shape(7));
  expect(shape(8).map((p) => p.body)).not.toEqual(shape(7).map((p) => p.body));
  const plans = shape(7);
  expect(new Set(plans.map((p) => p.key)).size).toBe(50);
  for (const p of plans) expect(p.key.length).toBeGreaterThanOrEqual(16);
  expect(plans.some((p) => p.copies > 1)).toBe(true);
});

it('orders faults by seed, each kind once per round', () => {
  const order = (seed: number) => new Rng(seed).shuffle(FAULTS).map((f) => f.kind);
  expect(order(3)).toEqual(order(3));
  expect([...order(3)].sort()).toEqual(FAULTS.map((f) => f.kind).sort());
  expect(order(3)).not.toEqual(order(4));
});

it('refuses unknown fault kinds by name', () => {
  expect(() => faultsByKind(['kill-api', 'meteor-strike'])).toThrow(/unknown fault kind\(s\): meteor-strike/);
  expect(faultsByKind(['kill-api']).map((f) => f.kind)).toEqual(['kill-api']);
});

it('offers the Temporal ↔ PostgreSQL cut only where Temporal is the real server', () => {
  expect(faultsByKind().map((f) => f.kind)).not.toContain('cut-temporal-postgres');
  expect(faultsByKind(undefined, { temporalServer: true }).map((f) => f.kind)).toContain('cut-temporal-postgres');
  expect(() => faultsByKind(['cut-temporal-postgres'])).toThrow(/unknown fault kind/);
});
