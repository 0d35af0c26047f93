// The wings' codes and settings join the house's once each: a name declared twice is refused.
import { describe, expect, it } from 'vitest';
import { catalogue } from '../../src/errors';
import { joined, wingProblems } from '../../src/wings-vocabulary';

describe('joined', () => {
  it('keeps every declaration, each under its name', () => {
    expect(joined({ a: 1 }, { b: 2 }, { c: 3 })).toEqual({ a: 1, b: 2, c: 3 });
  });

  it('refuses a name declared twice', () => {
    expect(() => joined({ a: 1 }, { b: 2, a: 3 })).toThrow('a is declared twice');
  });

  it("puts the wings' codes in the one catalogue", () => {
    expect(Object.keys(wingProblems).length).toBeGreaterThan(0);
    for (const [code, entry] of Object.entries(wingProblems)) expect(catalogue[code as keyof typeof catalogue]).toEqual(entry);
  });
});
