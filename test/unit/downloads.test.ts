// The download answer's pure parts: which byte range a Range header names, and the
// Content-Disposition a stored name becomes.
import { parse } from 'content-disposition';
import { describe, expect, it } from 'vitest';
import { resolveRange } from '../../src/downloads/range';
import { contentDisposition, isBrowserActive } from '../../src/downloads/disposition';

describe('resolveRange (RFC 9110 §14) on a 10-byte file', () => {
  const cases: [string | undefined, ReturnType<typeof resolveRange>][] = [
    [undefined, { kind: 'whole' }],
    ['bytes=0-0', { kind: 'part', range: { start: 0, end: 0 } }],
    ['bytes=2-5', { kind: 'part', range: { start: 2, end: 5 } }],
    ['bytes=5-', { kind: 'part', range: { start: 5, end: 9 } }],
    ['bytes=0-100', { kind: 'part', range: { start: 0, end: 9 } }],
    ['bytes=-3', { kind: 'part', range: { start: 7, end: 9 } }],
    // A suffix longer than the file is the whole file, as a part.
    ['bytes=-20', { kind: 'part', range: { start: 0, end: 9 } }],
    ['bytes=10-', { kind: 'unsatisfiable' }],
    ['bytes=10-20', { kind: 'unsatisfiable' }],
    ['bytes=-0', { kind: 'unsatisfiable' }],
    // Invalid or several ranges: ignored, the whole file is sent.
    ['bytes=5-2', { kind: 'whole' }],
    ['bytes=0-1,4-5', { kind: 'whole' }],
    ['items=0-1', { kind: 'whole' }],
    ['bytes=', { kind: 'whole' }],
    ['bytes=-', { kind: 'whole' }],
    ['bytes=a-b', { kind: 'whole' }],
  ];
  it.each(cases)('%s', (header, want) => expect(resolveRange(header, 10)).toEqual(want));
  it('an empty file satisfies no range', () => {
    expect(resolveRange('bytes=0-', 0)).toEqual({ kind: 'unsatisfiable' });
    expect(resolveRange('bytes=-1', 0)).toEqual({ kind: 'unsatisfiable' });
  });
});

describe('contentDisposition (RFC 6266)', () => {
  it('an ASCII name is a plain filename', () => {
    expect(contentDisposition('attachment', 'report.pdf')).toBe('attachment; filename=report.pdf');
  });
  it('a UTF-8 name gets an ASCII fallback and filename*', () => {
    const header = contentDisposition('inline', 'Résumé 日本.pdf');
    expect(header).toBe(`inline; filename="Resume __.pdf"; filename*=UTF-8''R%C3%A9sum%C3%A9%20%E6%97%A5%E6%9C%AC.pdf`);
    expect(parse(header).parameters.filename).toBe('Résumé 日本.pdf');
  });
  it('CR, LF, quotes and slashes cannot break out of the header or the quoted string', () => {
    const header = contentDisposition('attachment', 'a"\r\nSet-Cookie: x=1; b\\..\\/etc.txt');
    expect(header).not.toMatch(/[\r\n]/);
    const parsed = parse(header);
    expect(parsed.type).toBe('attachment');
    expect(parsed.parameters.filename).toBe('a"Set-Cookie: x=1; b_..__etc.txt');
    expect(header).toContain('filename="a_Set-Cookie: x=1; b_..__etc.txt"');
  });
  it('no name, or one of control characters only, gives the disposition alone', () => {
    expect(contentDisposition('inline', null)).toBe('inline');
    expect(contentDisposition('attachment', '\r\n')).toBe('attachment');
  });
  it('a bidirectional override in a stored name cannot make it display as another', () => {
    const parsed = parse(contentDisposition('attachment', 'photo\u202egpj.exe'));
    expect(parsed.parameters.filename).toBe('photogpj.exe');
  });
  it('scripts and markup are browser-active; images, PDFs and text are not', () => {
    for (const t of [
      'text/html',
      'image/svg+xml',
      'application/xhtml+xml',
      'text/xml',
      'application/atom+xml',
      'text/javascript',
      'application/javascript',
    ])
      expect(isBrowserActive(t), t).toBe(true);
    for (const t of ['image/png', 'application/pdf', 'text/plain', 'video/mp4', 'application/octet-stream'])
      expect(isBrowserActive(t), t).toBe(false);
  });
});
