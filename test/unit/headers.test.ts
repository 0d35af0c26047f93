import { describe, expect, it } from 'vitest';
import { Problem } from '../../src/errors';
import { parseIdempotencyKey } from '../../src/http/parse/idempotency-key';
import {
  parseContentLength,
  parseContentType,
  parseFileName,
  parsePrefer,
  parseSha256,
  parseWaitQuery,
} from '../../src/http/parse/request-headers';
import { fingerprint, type FingerprintParts } from '../../src/upload/fingerprint';

function code(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    if (err instanceof Problem) return err.code;
    throw err;
  }
  return 'ok';
}

describe('parseIdempotencyKey', () => {
  const k16 = 'abcdefghijklmnop';
  it('accepts bare and structured-field string forms', () => {
    expect(parseIdempotencyKey([k16])).toBe(k16);
    expect(parseIdempotencyKey([`"${k16}"`])).toBe(k16);
    expect(parseIdempotencyKey([`  ${k16}  `])).toBe(k16);
    expect(parseIdempotencyKey(['"a,b,c,d,e,f,g,h,i"'])).toBe('a,b,c,d,e,f,g,h,i'); // commas inside quotes
    expect(parseIdempotencyKey(['x'.repeat(255)])).toHaveLength(255);
  });
  it.each([
    [undefined, 'idempotency_key_required'],
    [[], 'idempotency_key_required'],
    [[''], 'idempotency_key_invalid'],
    [['x'.repeat(15)], 'idempotency_key_invalid'],
    [['x'.repeat(256)], 'idempotency_key_invalid'],
    [[`${k16},${k16}`], 'idempotency_key_invalid'],
    [[k16, k16], 'idempotency_key_invalid'],
    [[`"${k16}`], 'idempotency_key_invalid'],
    [[`"${k16}";p=1`], 'idempotency_key_invalid'],
    [[`"${k16} spaced"`], 'idempotency_key_invalid'],
    [['abcdefgh\u0001ijklmnop'], 'idempotency_key_invalid'],
    [['abcdefghijklmnop\u00e9'], 'idempotency_key_invalid'],
    [['?1'], 'idempotency_key_invalid'],
  ])('%j → %s', (values, expected) => {
    expect(code(() => parseIdempotencyKey(values as string[] | undefined))).toBe(expected);
  });
});

describe('other upload headers', () => {
  it('Content-Length', () => {
    expect(parseContentLength('10')).toBe(10);
    expect(parseContentLength('0')).toBe(0);
    expect(code(() => parseContentLength(undefined))).toBe('content_length_required');
    expect(code(() => parseContentLength('-1'))).toBe('header_invalid');
    expect(code(() => parseContentLength('1e3'))).toBe('header_invalid');
  });
  it('X-File-Sha256', () => {
    expect(parseSha256(undefined)).toBeNull();
    expect(parseSha256('A'.repeat(64))).toBe('a'.repeat(64));
    expect(code(() => parseSha256('g'.repeat(64)))).toBe('checksum_invalid');
  });
  it('X-File-Name', () => {
    expect(parseFileName('photo.jpg')).toBe('photo.jpg');
    expect(parseFileName('caf%C3%A9.txt')).toBe('café.txt');
    expect(code(() => parseFileName('a/b'))).toBe('header_invalid');
    expect(code(() => parseFileName('%E0%A4%A'))).toBe('header_invalid');
    expect(code(() => parseFileName('x'.repeat(256)))).toBe('header_invalid');
    // C1 controls and bidirectional overrides (a name that displays as another): refused.
    expect(code(() => parseFileName('a%C2%85b'))).toBe('header_invalid');
    expect(code(() => parseFileName('photo%E2%80%AEgpj.exe'))).toBe('header_invalid');
    expect(code(() => parseFileName('photo%E2%81%A6x%E2%81%A9.txt'))).toBe('header_invalid');
    // Right-to-left text itself is a name like any other.
    expect(parseFileName('%D7%A9%D7%9C%D7%95%D7%9D.txt')).toBe('שלום.txt');
  });
  it('Content-Type keeps the essence only', () => {
    expect(parseContentType(undefined)).toBe('application/octet-stream');
    expect(parseContentType('Text/Plain; charset=utf-8')).toBe('text/plain');
    expect(code(() => parseContentType('nonsense'))).toBe('header_invalid');
  });
  it('Prefer and ?wait', () => {
    expect(parsePrefer(undefined, 10, 60)).toEqual({ waitMs: 10_000 });
    expect(parsePrefer('wait=3', 10, 60)).toEqual({ waitMs: 3_000 });
    expect(parsePrefer('wait=600', 10, 60)).toEqual({ waitMs: 60_000 });
    expect(parsePrefer('respond-async, wait=5', 10, 60)).toEqual({ waitMs: 0 });
    expect(parseWaitQuery(undefined, 60)).toBe(0);
    expect(parseWaitQuery('5', 60)).toBe(5_000);
    expect(code(() => parseWaitQuery('-1', 60))).toBe('query_invalid');
  });
});

describe('fingerprint', () => {
  const base: FingerprintParts = {
    method: 'POST',
    route: '/v1/uploads',
    tenantId: 't1',
    contentLength: 5,
    contentType: 'text/plain',
    sha256: null,
    fileName: 'a.txt',
  };
  it('is stable for equal requests and differs when any part differs', () => {
    expect(fingerprint(base)).toBe(fingerprint({ ...base }));
    const variants: Partial<FingerprintParts>[] = [
      { tenantId: 't2' },
      { contentLength: 6 },
      { contentType: 'text/html' },
      { sha256: 'a'.repeat(64) },
      { fileName: null },
      { route: '/v1/other' },
    ];
    for (const v of variants) expect(fingerprint({ ...base, ...v })).not.toBe(fingerprint(base));
  });
});

describe('problem catalogue', () => {
  it('renders RFC 9457 members plus error and message', () => {
    const p = new Problem('database_unavailable', 'db down');
    expect(p.status).toBe(503);
    expect(p.retryAfter).toBe(5);
    expect(p.toJSON()).toEqual({
      type: 'https://oncely.dev/problems/database-unavailable',
      title: 'Database is unavailable',
      status: 503,
      detail: 'db down',
      error: 'database_unavailable',
      message: 'db down',
    });
  });
});
