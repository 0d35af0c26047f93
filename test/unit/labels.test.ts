// Metadata and tags as the doors parse them, the token's merge, the fingerprint's key order,
// the label index entries and If-Match: each bad value is a catalogue problem naming the field.
import { describe, expect, it } from 'vitest';
import { Problem } from '../../src/errors';
import { labelsOf, parseLabelValues, parseMetadataText, parseTagsText } from '../../src/http/parse/labels';
import { grantedLabels, type UploadGrant } from '../../src/tokens/grant';
import { fingerprint } from '../../src/upload/fingerprint';
import { labelKeys } from '../../src/db/queries/upload-record';
import { parseIfMatch } from '../../src/http/record-etag';
import { eventId, isDerivedEventId, numberedEventId } from '../../src/downstream/events';

const refusal = (fn: () => unknown) => {
  try {
    fn();
  } catch (err) {
    if (err instanceof Problem) return { code: err.code, detail: err.detail };
    throw err;
  }
  throw new Error('not refused');
};

describe('metadata and tags as sent', () => {
  it('parse JSON text and comma lists into canonical labels (tags sorted, once)', () => {
    expect(labelsOf(parseMetadataText('{"b":1,"a":{"x":[1,2]}}', 'header_invalid'), parseTagsText(' z, a ,z ', 'header_invalid'))).toEqual({
      metadata: { b: 1, a: { x: [1, 2] } },
      tags: ['a', 'z'],
    });
    expect(labelsOf(parseMetadataText('', 'header_invalid'), parseTagsText(undefined, 'header_invalid'))).toBeUndefined();
    expect(labelsOf({}, [])).toBeUndefined();
    expect(parseLabelValues({ tags: ['été', 'x y'] }, 'body_invalid')).toEqual({ tags: ['x y', 'été'] });
  });

  it.each([
    ['not JSON', () => parseMetadataText('{', 'header_invalid'), 'header_invalid', 'not valid JSON'],
    ['an array', () => parseMetadataText('[]', 'form_invalid'), 'form_invalid', 'JSON object'],
    ['a string', () => parseMetadataText('"s"', 'header_invalid'), 'header_invalid', 'JSON object'],
    ['too deep', () => parseLabelValues({ metadata: { a: { b: { c: { d: {} } } } } }, 'body_invalid'), 'body_invalid', 'levels deep'],
    ['an empty key', () => parseLabelValues({ metadata: { '': 1 } }, 'body_invalid'), 'body_invalid', 'keys are 1-64'],
    ['too large', () => parseLabelValues({ metadata: { a: 'x'.repeat(16_400) } }, 'body_invalid'), 'body_invalid', '16384 bytes'],
    [
      'too many entries',
      () => parseLabelValues({ metadata: Object.fromEntries(Array.from({ length: 65 }, (_, i) => [`k${i}`, i])) }, 'body_invalid'),
      'body_invalid',
      '64 top-level',
    ],
    ['a bad tag', () => parseTagsText('a,-b', 'header_invalid'), 'header_invalid', 'tags[1]'],
    ['an empty tag', () => parseTagsText('a,,b', 'header_invalid'), 'header_invalid', 'A tag is'],
    ['a long tag', () => parseTagsText('x'.repeat(65), 'header_invalid'), 'header_invalid', 'A tag is'],
    [
      '33 tags',
      () => parseLabelValues({ tags: Array.from({ length: 33 }, (_, i) => `t${i}`) }, 'body_invalid'),
      'body_invalid',
      'at most 32',
    ],
    ['tags not a list', () => parseLabelValues({ tags: 'a' }, 'body_invalid'), 'body_invalid', 'tags'],
  ])('refuse %s with the part’s problem', (_name, fn, code, detail) => {
    const r = refusal(fn);
    expect(r.code).toBe(code);
    expect(r.detail).toContain(detail);
  });
});

describe("an upload token's metadata", () => {
  const grant = { tokenId: 't', subject: null, metadata: { album: 'fixed' } } as unknown as UploadGrant;
  it('is merged over the upload’s; the same value is fine, another is 403', () => {
    expect(grantedLabels(grant, { metadata: { rating: 4 }, tags: ['a'] })).toEqual({
      metadata: { rating: 4, album: 'fixed' },
      tags: ['a'],
    });
    expect(grantedLabels(grant, undefined)).toEqual({ metadata: { album: 'fixed' } });
    expect(grantedLabels(grant, { metadata: { album: 'fixed' } })).toEqual({ metadata: { album: 'fixed' } });
    expect(refusal(() => grantedLabels(grant, { metadata: { album: 'mine' } })).code).toBe('metadata_not_allowed');
    expect(grantedLabels(undefined, { tags: ['a'] })).toEqual({ tags: ['a'] });
  });
});

describe('the fingerprint of labels', () => {
  const base = {
    method: 'POST',
    route: '/v1/uploads',
    tenantId: 't',
    contentLength: 1,
    contentType: 'text/plain',
    sha256: null,
    fileName: null,
  };
  it('ignores key order, not values; no labels is the fingerprint it always was', () => {
    const a = fingerprint({ ...base, labels: { metadata: { a: 1, b: { c: 2, d: 3 } } } });
    expect(fingerprint({ ...base, labels: { metadata: { b: { d: 3, c: 2 }, a: 1 } } })).toBe(a);
    expect(fingerprint({ ...base, labels: { metadata: { a: 2, b: { c: 2, d: 3 } } } })).not.toBe(a);
    expect(fingerprint({ ...base, labels: { metadata: { a: 1, b: { c: 2, d: 3 } }, tags: ['x'] } })).not.toBe(a);
    expect(fingerprint({ ...base, labels: undefined })).toBe(fingerprint(base));
  });
});

describe('the label index', () => {
  it('holds each tag and each top-level scalar entry (numbers and booleans as JSON), not objects or long ones', () => {
    expect(labelKeys({ tags: ['a'], metadata: { s: 'x', n: 3, b: false, o: { x: 1 }, l: [1], z: null, long: 'v'.repeat(600) } })).toEqual([
      't:a',
      'm:s=x',
      'm:n=3',
      'm:b=false',
    ]);
  });
});

describe('If-Match', () => {
  it('names one version; without one it is 428, malformed 400', () => {
    expect(parseIfMatch('"3"')).toBe(3);
    expect(parseIfMatch('W/"12"')).toBe(12);
    expect(refusal(() => parseIfMatch(undefined)).code).toBe('record_version_required');
    expect(refusal(() => parseIfMatch('*')).code).toBe('record_version_required');
    for (const bad of ['3', '"0"', '"1", "2"', '"99999999999"', '"x"'])
      expect(refusal(() => parseIfMatch(bad)).code, bad).toBe('header_invalid');
  });
});

describe('numbered event ids', () => {
  const u = '0b8f7a4e-2f4c-4d7e-9b59-3c1b8e0a6d21';
  it('number the events an upload sends many of, and the audit tells them from forged ones', () => {
    expect(numberedEventId(u, 'upload.updated', 2)).toBe('evt_0b8f7a4e2f4c4d7e9b593c1b8e0a6d21_updated_2');
    expect(numberedEventId(u, 'upload.hold_released', 3)).toBe('evt_0b8f7a4e2f4c4d7e9b593c1b8e0a6d21_hold_released_3');
    expect(isDerivedEventId(numberedEventId(u, 'upload.hold_placed', 1), u, 'upload.hold_placed')).toBe(true);
    expect(isDerivedEventId(eventId(u, 'upload.updated'), u, 'upload.updated')).toBe(false);
    expect(isDerivedEventId(`${eventId(u, 'upload.updated')}_0`, u, 'upload.updated')).toBe(false);
    expect(isDerivedEventId(numberedEventId(u, 'upload.updated', 2), u, 'upload.hold_placed')).toBe(false);
    expect(isDerivedEventId(eventId(u, 'upload.completed'), u, 'upload.completed')).toBe(true);
    expect(isDerivedEventId(`${eventId(u, 'upload.completed')}_1`, u, 'upload.completed')).toBe(false);
  });
});
