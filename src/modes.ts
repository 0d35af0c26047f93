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

/** The route an import's fingerprints record (a key first used elsewhere is 422 there). Its
 * routes are the import wing's (src/imports/wing.ts); spelled here so the list of doors names
 * it without reaching into the wing. */
export const IMPORT_ROUTE = '/v1/imports';

type Table = typeof ARRIVAL_MODES;
export type ArrivalMode = keyof Table;
/** Modes whose upload is a session row. */
export type SessionMode = { [M in ArrivalMode]: Table[M] extends 'appended' | 'signed' ? M : never }[ArrivalMode];
/** Session modes whose bytes arrive through the API as appends at an offset. */
export type AppendedMode = { [M in ArrivalMode]: Table[M] extends 'appended' ? M : never }[ArrivalMode];

export function isAppended(mode: SessionMode): mode is AppendedMode {
  return ARRIVAL_MODES[mode] === 'appended';
}
