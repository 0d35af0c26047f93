// The one decision of what becomes of an offered copy: every end of a delivery, and why.
import { describe, expect, it } from 'vitest';
import { copyFate } from '../../src/upload/settle';

describe('copyFate', () => {
  it('discards a copy no run saw, or that a replay answered', () => {
    expect(copyFate({ at: 'before-offer' })).toBe('discard');
  });

  it('keeps a session’s refused copy for its next attempt, unless the key is another request’s', () => {
    expect(copyFate({ at: 'offer-refused', session: true, keyReuse: false })).toBe('keep');
    expect(copyFate({ at: 'offer-refused', session: true, keyReuse: true })).toBe('discard');
    expect(copyFate({ at: 'offer-refused', session: false, keyReuse: false })).toBe('discard');
  });

  it('never deletes a copy whose fate is unknown: it waits for the committed answer', () => {
    expect(copyFate({ at: 'offer-unknown' })).toBe('settle-later');
    expect(copyFate({ at: 'after-offer', keyReuse: false })).toBe('settle-later');
    expect(copyFate({ at: 'answered', committedBody: undefined })).toBe('settle-later');
  });

  it('discards after a key reuse (nothing was written that could name it)', () => {
    expect(copyFate({ at: 'after-offer', keyReuse: true })).toBe('discard');
  });

  it('settles against the committed answer: the copy goes only if the answer names another object', () => {
    expect(copyFate({ at: 'answered', committedBody: '{"storageKey":"a"}' })).toEqual({ settleAgainst: '{"storageKey":"a"}' });
  });
});
