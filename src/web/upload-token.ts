// The upload pages' credential: an upload token, minted the way an app's backend would
// (POST /v1/upload-tokens) with the key the operator entered on /setup, and kept in this
// browser until shortly before it expires. Kept across reloads on purpose: a resumable
// upload restored after a reload continues under the token that created its session.
export const MINTER_KEY_STORAGE = 'oncely.minterKey';
/** The hosts the page's token may import from (the Link source), comma-separated; set on /setup. */
export const IMPORT_HOSTS_STORAGE = 'oncely.importHosts';
export const TOKEN_STORAGE = 'oncely.uploadToken';

export interface UploadToken {
  token: string;
  id: string;
  expiresAt: string;
  importHosts: string[] | null;
}

/** The import hosts the operator entered on /setup. */
export function importHosts(): string[] {
  return (localStorage.getItem(IMPORT_HOSTS_STORAGE) ?? '')
    .split(',')
    .map((h) => h.trim().toLowerCase())
    .filter(Boolean);
}

/** The stored token while it has more than a minute left; else a new one (null without a key). */
export async function currentUploadToken(): Promise<UploadToken | null> {
  const kept = JSON.parse(localStorage.getItem(TOKEN_STORAGE) ?? 'null') as UploadToken | null;
  if (kept && Date.parse(kept.expiresAt) - Date.now() > 60_000) return kept;
  const key = localStorage.getItem(MINTER_KEY_STORAGE);
  if (!key) return null;
  const res = await fetch('/v1/upload-tokens', {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'idempotency-key': `page-token-${crypto.randomUUID()}` },
    body: JSON.stringify({
      expiresInSeconds: 3600,
      subject: 'upload-page',
      ...(importHosts().length ? { importHosts: importHosts() } : {}),
    }),
  });
  if (!res.ok) return null;
  const minted = (await res.json()) as UploadToken;
  localStorage.setItem(
    TOKEN_STORAGE,
    JSON.stringify({ token: minted.token, id: minted.id, expiresAt: minted.expiresAt, importHosts: minted.importHosts }),
  );
  return minted;
}
