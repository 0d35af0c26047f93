// A `Range` header against a representation of `size` bytes (RFC 9110 §14). One part is
// served: a header that does not parse, is not in bytes, or names several parts is ignored
// and the whole representation sent, as the RFC allows; a first byte past the end answers
// 416. Written here because range-parser answers a suffix longer than the representation
// with "unsatisfiable", where RFC 9110 §14.1.3 sends the whole of it.

/** Inclusive byte positions of the part to send. */
export interface ByteRange {
  start: number;
  end: number;
}

export type RangeAnswer = { kind: 'whole' } | { kind: 'part'; range: ByteRange } | { kind: 'unsatisfiable' };

const SINGLE = /^bytes=(\d{0,16})-(\d{0,16})$/i;

export function resolveRange(header: string | undefined, size: number): RangeAnswer {
  const m = header === undefined ? null : SINGLE.exec(header.trim());
  if (!m || (m[1] === '' && m[2] === '')) return { kind: 'whole' };
  const [first, last] = [m[1]!, m[2]!];
  if (first === '') {
    // The last N bytes; all of them when N is more than there are.
    const n = Number(last);
    if (n === 0 || size === 0) return { kind: 'unsatisfiable' };
    return { kind: 'part', range: { start: Math.max(0, size - n), end: size - 1 } };
  }
  const start = Number(first);
  if (last !== '' && Number(last) < start) return { kind: 'whole' };
  if (start >= size) return { kind: 'unsatisfiable' };
  return { kind: 'part', range: { start, end: last === '' ? size - 1 : Math.min(Number(last), size - 1) } };
}
