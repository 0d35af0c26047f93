// The app shows and cancels an upload not yet committed through exactly one wing: a list of
// wings with none, or with two, is refused as the app is built rather than answering 404 for
// the second wing's uploads.
import { describe, expect, it } from 'vitest';
import { uncommittedOf, type Wing } from '../../src/http/wing';
import type { UncommittedUploads } from '../../src/upload/uncommitted';

const held = (name: string) => ({ name }) as unknown as UncommittedUploads;

describe('the wing that holds uploads before their commit', () => {
  it('is the one wing that says so', () => {
    const imports = held('imports');
    expect(uncommittedOf([{}, { uncommitted: imports }, { close: () => {} }])).toBe(imports);
  });

  it('is refused when no wing or two wings hold them', () => {
    const none: Wing[] = [{}, { close: () => {} }];
    expect(() => uncommittedOf(none)).toThrow('0 wings hold uploads before their commit');
    expect(() => uncommittedOf([{ uncommitted: held('a') }, { uncommitted: held('b') }])).toThrow('2 wings hold uploads');
  });
});
