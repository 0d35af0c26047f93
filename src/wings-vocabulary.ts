// What the wings add to the house's one catalogue of problems (src/errors.ts) and its one
// configuration (src/config/): each wing declares its own beside its code (problems.ts,
// settings.ts, on the vocabulary floor), and a wing with either is a line or two here.
import { consoleSettings } from './console/settings';
import { importProblems } from './imports/problems';
import { importSettings } from './imports/settings';

export const wingProblems = { ...importProblems };

/** In the order docs/CONFIGURATION.md shows them, after the house's own. */
export const wingSettings = { ...importSettings, ...consoleSettings };
