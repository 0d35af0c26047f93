// What the wings add to the house's one catalogue of problems (src/errors.ts) and its one
// configuration (src/config/): each wing declares its own beside its code (problems.ts,
// settings.ts, on the vocabulary floor), and a wing with either is a line or two here.
import { consoleSettings } from './console/settings';
import { importProblems } from './imports/problems';
import { importSettings } from './imports/settings';

/** Every member of a union at once (the type of declarations joined into one object). */
export type AllOf<U> = (U extends unknown ? (u: U) => void : never) extends (all: infer I) => void ? I : never;

/** Declarations in one object; a name declared twice (by two wings, or by a wing and the house) is refused as the process loads. */
export function joined<T extends object[]>(...parts: T): AllOf<T[number]> {
  const all: Record<string, unknown> = {};
  for (const part of parts)
    for (const [name, value] of Object.entries(part)) {
      if (name in all) throw new Error(`${name} is declared twice`);
      all[name] = value;
    }
  return all as AllOf<T[number]>;
}

export const wingProblems = joined(importProblems);

/** In the order docs/CONFIGURATION.md shows them, after the house's own. */
export const wingSettings = joined(importSettings, consoleSettings);
