// The value shapes settings share: booleans as the environment spells them, comma lists,
// and strings where empty means unset.
import { z } from 'zod';

export const bool = z.enum(['true', 'false', '1', '0', 'yes', 'no']).transform((v) => v === 'true' || v === '1' || v === 'yes');

/** A comma-separated list (blank entries dropped), `fallback` when unset. */
export const commaList = (fallback: string) =>
  z
    .string()
    .default(fallback)
    .transform((v) =>
      v
        .split(',')
        .map((item) => item.trim())
        .filter(Boolean),
    );

export const optionalString = z
  .string()
  .optional()
  .transform((v) => (v === undefined || v === '' ? undefined : v));
