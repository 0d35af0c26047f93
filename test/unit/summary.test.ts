import { describe, expect, it } from 'vitest';
import { escapeMarkdown, SUMMARY_MAX_BYTES, truncateUtf8, uploadSummary } from '../../src/temporal/summary';

const req = {
  contentType: 'image/png',
  declaredBytes: 123456,
  tenantId: '6f1c2b9e-0000-4000-8000-000000000000',
  idempotencyKey: 'k'.repeat(255),
};

describe('Temporal UI summary and details', () => {
  it.each([
    ['the longest allowed ASCII name', 'a'.repeat(255)],
    ['the longest allowed non-ASCII name (3-byte characters)', '€'.repeat(255)],
    ['the longest allowed name of 4-byte characters', '😀'.repeat(127)],
  ])('%s fits the 200-byte summary, on one line, cut at a character boundary', (_what, fileName) => {
    const summary = uploadSummary({ ...req, fileName });
    expect(Buffer.byteLength(summary)).toBeLessThanOrEqual(SUMMARY_MAX_BYTES);
    expect(summary).not.toContain('\n');
    expect(summary).not.toContain('\uFFFD');
    expect(Buffer.from(summary).toString('utf8')).toBe(summary);
    expect(summary).toMatch(/^Upload .*… · image\/png · 123456 bytes$/);
  });

  it('Markdown and HTML in the name are escaped, not rendered', () => {
    const summary = uploadSummary({ ...req, fileName: '**bold** <img src=x onerror=alert(1)> [link](http://evil) `code`.png' });
    expect(summary).not.toMatch(/(?<!\\)[*<>[\]`]/);
    expect(summary).toContain('\\*\\*bold\\*\\*');
    expect(summary).toContain('\\<img');
  });

  it('truncation never leaves a dangling escape', () => {
    expect(truncateUtf8(escapeMarkdown('a*'.repeat(100)), 20)).not.toMatch(/(?<!\\)\\…$/);
  });
});
