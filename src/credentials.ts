// What a credential may do. An API key holds scopes; one made without a list holds them
// all (and any added later). Routes name the scope they need (src/api/scopes.ts).
export const SCOPES = [
  'uploads:write',
  'uploads:read',
  'uploads:delete',
  'tokens:mint',
  'webhooks:manage',
  'keys:manage',
  'pipelines:manage',
] as const;
export type Scope = (typeof SCOPES)[number];

/** Who is calling: an API key (with its scopes). */
export interface Principal {
  kind: 'key';
  id: string;
  scopes: readonly Scope[];
}

/** What a bearer token stands for. */
export interface Credential {
  tenantId: string;
  principal: Principal;
}

/** The scopes a key is stored with (null: all of them). */
export function heldScopes(stored: readonly string[] | null): readonly Scope[] {
  return stored === null ? SCOPES : SCOPES.filter((s) => stored.includes(s));
}
