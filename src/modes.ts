// The ways an upload arrives, spelled once. Each has a door in src/arrivals/ (the list is
// src/arrivals/index.ts). The table sits at the bottom of the layers because the database
// records a session's mode and the validation hook is told it.

/** Each mode and what its upload is before the commit: nothing kept between requests, an
 * appended session (bytes arrive through the API at an offset), a signed one (bytes go
 * straight to the store through signed URLs), or an import (its run reads the file from
 * its origin). */
export const ARRIVAL_MODES = {
  upload: 'none',
  form: 'none',
  tus: 'appended',
  rufh: 'appended',
  direct: 'signed',
  uppy: 'signed',
  import: 'fetched',
} as const;

type Table = typeof ARRIVAL_MODES;
export type ArrivalMode = keyof Table;
/** Modes whose upload is a session row. */
export type SessionMode = { [M in ArrivalMode]: Table[M] extends 'appended' | 'signed' ? M : never }[ArrivalMode];
/** Session modes whose bytes arrive through the API as appends at an offset. */
export type AppendedMode = { [M in ArrivalMode]: Table[M] extends 'appended' ? M : never }[ArrivalMode];

export function isAppended(mode: SessionMode): mode is AppendedMode {
  return ARRIVAL_MODES[mode] === 'appended';
}
