// The byte quotas' pure parts: which quota a request would pass, and the usage window.
import { describe, expect, it } from 'vitest';
import {
  ByteQuotaExceeded,
  firstExceeded,
  NO_QUOTAS,
  remainingUnder,
  type ByteQuotas,
  type QuotaStanding,
} from '../../src/db/queries/byte-quotas';
import { byteQuotaProblem, quotaRefusal } from '../../src/upload/byte-quota';
import { MAX_BUCKETS, usageWindow } from '../../src/quotas/usage-window';

const none: ByteQuotas = { maxStoredBytes: null, maxIngressBytesPerMonth: null, maxUploadsPerMonth: null };
const standing = (over: Partial<QuotaStanding> = {}): QuotaStanding => ({
  storedBytes: 0,
  ingressBytesThisMonth: 0,
  uploadsThisMonth: 0,
  reservedBytes: 0,
  reservedUploads: 0,
  ...over,
});

describe('firstExceeded', () => {
  it('passes anything when no quota is set', () => {
    expect(firstExceeded(none, standing({ storedBytes: 1e15, uploadsThisMonth: 1e9 }), 1e12)).toBeUndefined();
  });

  it('counts stored and reserved bytes against maxStoredBytes, up to the limit exactly', () => {
    const q = { ...none, maxStoredBytes: 1000 };
    expect(firstExceeded(q, standing({ storedBytes: 600, reservedBytes: 300 }), 100)).toBeUndefined();
    const over = firstExceeded(q, standing({ storedBytes: 600, reservedBytes: 300 }), 101);
    expect(over).toBeInstanceOf(ByteQuotaExceeded);
    expect(over).toMatchObject({ quota: 'maxStoredBytes', limit: 1000, remaining: 100, requested: 101 });
  });

  it("counts this month's ingress and reservations against the monthly ingress, and uploads one each", () => {
    expect(
      firstExceeded({ ...none, maxIngressBytesPerMonth: 50 }, standing({ ingressBytesThisMonth: 40, reservedBytes: 5 }), 6),
    ).toMatchObject({
      quota: 'maxIngressBytesPerMonth',
      remaining: 5,
    });
    const uploads = { ...none, maxUploadsPerMonth: 3 };
    expect(firstExceeded(uploads, standing({ uploadsThisMonth: 1, reservedUploads: 1 }), 0)).toBeUndefined();
    expect(firstExceeded(uploads, standing({ uploadsThisMonth: 2, reservedUploads: 1 }), 0)).toMatchObject({
      quota: 'maxUploadsPerMonth',
      remaining: 0,
      requested: 1,
    });
  });

  it('never reports a negative remainder when usage is already past a lowered quota', () => {
    expect(firstExceeded({ ...none, maxStoredBytes: 10 }, standing({ storedBytes: 50 }), 1)).toMatchObject({ remaining: 0 });
  });

  it('says what is left under each quota as firstExceeded counts it: null when unlimited, never negative', () => {
    const s = standing({ storedBytes: 600, reservedBytes: 300, ingressBytesThisMonth: 50, uploadsThisMonth: 4, reservedUploads: 1 });
    expect(remainingUnder(NO_QUOTAS, s)).toEqual({ maxStoredBytes: null, maxIngressBytesPerMonth: null, maxUploadsPerMonth: null });
    const q = { maxStoredBytes: 1000, maxIngressBytesPerMonth: 100, maxUploadsPerMonth: 5 };
    expect(remainingUnder(q, s)).toEqual({ maxStoredBytes: 100, maxIngressBytesPerMonth: 0, maxUploadsPerMonth: 0 });
    // Exactly what is left fits; one more does not.
    const stored = { ...NO_QUOTAS, maxStoredBytes: 1000 };
    expect(firstExceeded(stored, s, remainingUnder(stored, s).maxStoredBytes!)).toBeUndefined();
    expect(firstExceeded(stored, s, remainingUnder(stored, s).maxStoredBytes! + 1)).toMatchObject({
      quota: 'maxStoredBytes',
      remaining: 100,
    });
  });

  it('answers 413 byte_quota_exceeded with the quota, its limit and what is left', () => {
    const p = byteQuotaProblem(quotaRefusal(new ByteQuotaExceeded('maxStoredBytes', 1000, 100, 101)));
    expect(p.code).toBe('byte_quota_exceeded');
    expect(p.status).toBe(413);
    expect(p.extra).toEqual({ quota: 'maxStoredBytes', limit: 1000, remaining: 100, requested: 101 });
    expect(p.message).toContain('100 bytes are left');
  });
});

describe('usageWindow', () => {
  const now = new Date('2026-12-06T22:30:00Z');

  it('defaults to the last 30 days, or 48 hours, in whole buckets ending after now', () => {
    expect(usageWindow({ granularity: 'day' }, now)).toEqual({
      from: new Date('2026-11-07T00:00:00Z'),
      to: new Date('2026-12-07T00:00:00Z'),
      granularity: 'day',
    });
    const hours = usageWindow({ granularity: 'hour' }, now);
    expect(hours.to).toEqual(new Date('2026-12-06T23:00:00Z'));
    expect(hours.from).toEqual(new Date('2026-12-04T23:00:00Z'));
  });

  it('widens the bounds given to whole buckets, offsets understood', () => {
    const w = usageWindow({ from: '2026-12-01T10:15:00+02:00', to: '2026-12-01T12:00:01Z', granularity: 'hour' }, now);
    expect(w.from).toEqual(new Date('2026-12-01T08:00:00Z'));
    expect(w.to).toEqual(new Date('2026-12-01T13:00:00Z'));
  });

  it('refuses an empty window and one of more buckets than the maximum', () => {
    expect(() => usageWindow({ from: '2026-12-02T00:00:00Z', to: '2026-12-01T00:00:00Z', granularity: 'day' }, now)).toThrow(
      expect.objectContaining({ code: 'query_invalid' }),
    );
    const to = new Date(Date.UTC(2026, 0, 1));
    const from = new Date(to.getTime() - (MAX_BUCKETS + 1) * 3_600_000);
    expect(() => usageWindow({ from: from.toISOString(), to: to.toISOString(), granularity: 'hour' }, now)).toThrow(
      expect.objectContaining({ code: 'query_invalid' }),
    );
    expect(usageWindow({ from: from.toISOString(), to: to.toISOString(), granularity: 'day' }, now).granularity).toBe('day');
  });
});
