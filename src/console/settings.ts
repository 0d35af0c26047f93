// The console (/console): its sign-in sessions and where its links lead.
// docs/CONFIGURATION.md is generated from these comments (npm run docs:config).
import { z } from 'zod';
import { optionalString } from '../config/values';

export const consoleSettings = {
  /** How long a console sign-in lasts; revoking the session or its API key ends it sooner. */
  CONSOLE_SESSION_HOURS: z.coerce.number().positive().max(720).default(12),
  /**
   * The Temporal UI an upload's page links its run to (e.g. `https://temporal.example.com`).
   * @default the embedded default's own UI; elsewhere unset: no link
   */
  TEMPORAL_UI_URL: optionalString.refine((v) => v === undefined || /^https?:\/\/[^?#]+$/.test(v), 'must be an http(s) URL'),
};
