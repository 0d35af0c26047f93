// The replay-answer cache: returns what was remembered, never outlives the key, stays
// within its byte budget, skips large bodies, and does nothing when sized 0.
import { setTimeout as sleep } from 'node:timers/promises';
import { expect, it } from 'vitest';
import type { LiveKeyAnswer } from '../../src/db/queries/idempotency-keys';
import { AnswerCache } from '../../src/upload/answer-cache';

const answer = (body: string, ttl_seconds = 3600): LiveKeyAnswer => ({
  fingerprint: 'f'.repeat(64),
  upload_id: null,
  response_status: 201,
  response_body: body,
  expired: false,
  ttl_seconds,
});

it('returns the remembered answer per tenant and key', () => {
  const cache = new AnswerCache(1024 * 1024);
  cache.remember('t1', 'key-a', answer('{"a":1}'));
  expect(cache.get('t1', 'key-a')?.response_body).toBe('{"a":1}');
  expect(cache.get('t2', 'key-a')).toBeUndefined();
  expect(cache.get('t1', 'key-b')).toBeUndefined();
});

it('forgets an answer when its key expires', async () => {
  const cache = new AnswerCache(1024 * 1024);
  cache.remember('t', 'short-lived-key', answer('{}', 0.05));
  cache.remember('t', 'already-expired', answer('{}', 0));
  expect(cache.get('t', 'already-expired')).toBeUndefined();
  await sleep(120);
  expect(cache.get('t', 'short-lived-key')).toBeUndefined();
});

it('stays within its byte budget, evicting the least recently used', () => {
  const cache = new AnswerCache(10_000);
  for (let i = 0; i < 100; i++) cache.remember('t', `key-${i}`, answer('x'.repeat(1000)));
  const kept = Array.from({ length: 100 }, (_, i) => cache.get('t', `key-${i}`)).filter(Boolean).length;
  expect(kept).toBeGreaterThan(0);
  expect(kept).toBeLessThanOrEqual(10);
  expect(cache.get('t', 'key-99')).toBeDefined();
  expect(cache.get('t', 'key-0')).toBeUndefined();
});

it('does not cache large bodies, nor anything when sized 0', () => {
  const cache = new AnswerCache(10 * 1024 * 1024);
  cache.remember('t', 'big', answer('x'.repeat(70 * 1024)));
  expect(cache.get('t', 'big')).toBeUndefined();
  const off = new AnswerCache(0);
  off.remember('t', 'k', answer('{}'));
  expect(off.get('t', 'k')).toBeUndefined();
});
