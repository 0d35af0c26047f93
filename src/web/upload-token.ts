// The upload pages' credential: an upload token, minted through the console session of this
// browser (POST /console/upload-tokens, as an app's backend would mint one with its key), and
// kept here until shortly before it expires. No API key is ever held by a page. Kept across
// reloads on purpose: a resumable upload restored after a reload continues under the token
// that created its session.
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

/** The signed-in console session's CSRF token; null when this browser is not signed in. */
export async function consoleSession(): Promise<{ csrfToken: string } | null> {
  const res = await fetch('/console/session', { redirect: 'manual', credentials: 'same-origin' });
  return res.ok ? ((await res.json()) as { csrfToken: string }) : null;
}

/** The stored token while it has more than a minute left; else a new one (null when not signed in). */
export async function currentUploadToken(): Promise<UploadToken | null> {
  const kept = JSON.parse(localStorage.getItem(TOKEN_STORAGE) ?? 'null') as UploadToken | null;
  if (kept && Date.parse(kept.expiresAt) - Date.now() > 60_000) return kept;
  const session = await consoleSession();
  if (!session) return null;
  const res = await fetch('/console/upload-tokens', {
    method: 'POST',
    credentials: 'same-origin',
    headers: {
      'content-type': 'application/json',
      'x-csrf-token': session.csrfToken,
      'idempotency-key': `page-token-${crypto.randomUUID()}`,
    },
    body: JSON.stringify(importHosts().length ? { importHosts: importHosts() } : {}),
  });
  if (!res.ok) return null;
  const minted = (await res.json()) as UploadToken;
  localStorage.setItem(
    TOKEN_STORAGE,
    JSON.stringify({ token: minted.token, id: minted.id, expiresAt: minted.expiresAt, importHosts: minted.importHosts }),
  );
  return minted;
}
