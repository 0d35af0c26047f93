// What a credential may do. An API key holds scopes; one made without a list holds them
// all (and any added later). Routes name the scope they need (src/http/scopes.ts). An
// upload token holds no scope: routes that take one say so.
import type { UploadGrant } from './tokens/grant';

export const SCOPES = [
  'uploads:write',
  'uploads:read',
  'uploads:delete',
  'tokens:mint',
  'webhooks:manage',
  'keys:manage',
  'pipelines:manage',
  'imports:create',
  'records:write',
  'uploads:hold',
  'uploads:purge',
  'storage:manage',
] as const;
export type Scope = (typeof SCOPES)[number];

/** Who is calling: an API key (with its scopes), or an upload token (no scope; its grant). */
export type Principal =
  | { kind: 'key'; id: string; label: string; scopes: readonly Scope[] }
  | { kind: 'token'; id: string; scopes: readonly Scope[]; grant: UploadGrant };

/** What a bearer token stands for. */
export interface Credential {
  tenantId: string;
  principal: Principal;
}

/** The scopes a key is stored with (null: all of them). */
export function heldScopes(stored: readonly string[] | null): readonly Scope[] {
  return stored === null ? SCOPES : SCOPES.filter((s) => stored.includes(s));
}
