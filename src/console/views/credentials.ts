// Credentials: the tenant's API keys (create with scopes, revoke) and console sessions (revoke).
import { html } from 'hono/html';
import { SCOPES } from '../../credentials';
import type { ConsoleSessionRow } from '../queries';
import type { ConsoleCaller } from '../sessions';
import { actionButton, badge, bytes, may, page, table, when, type Fragment } from './kit';

export interface ApiKey {
  id: string;
  label: string;
  scopes: string[];
  createdAt: string;
  revokedAt: string | null;
  lastUsedAt: string | null;
}

export interface UploadToken {
  id: string;
  subject: string | null;
  expiresAt: string;
  maxUploads: number | null;
  uploadsUsed: number;
  maxBytes: number | null;
  allowedTypes: string[] | null;
  revokedAt: string | null;
}

function tokenState(t: UploadToken): string {
  return t.revokedAt ? 'revoked' : Date.parse(t.expiresAt) <= Date.now() ? 'expired' : 'active';
}

export function credentialsPage(
  caller: ConsoleCaller,
  p: { keys: ApiKey[]; tokens: UploadToken[]; created?: { key: string; label: string }; notice?: string; error?: string },
): Fragment {
  const manage = may(caller, 'keys:manage');
  const own = caller.kind === 'tenant' ? caller.credential.principal.id : undefined;
  return page(
    { title: 'Credentials', caller, current: '/console/credentials', notice: p.notice, error: p.error },
    html`${
        p.created
          ? html`<div class="secret" role="status">
              <p>The new key <strong>${p.created.label}</strong> is shown this once; copy it now.</p>
              <code id="new-key">${p.created.key}</code>
            </div>`
          : ''
      }
      <section aria-labelledby="keys-h">
        <h2 id="keys-h">API keys</h2>
        ${table({
          caption: 'API keys',
          columns: ['Label', 'Scopes', 'Created', 'Last used', 'State', { hidden: 'Actions' }],
          rows: p.keys.map(
            (k) =>
              html`<tr>
                <td>
                  ${k.label || html`<span class="muted">(no label)</span>`}
                  ${k.id === own ? html`<span class="muted">(this session's)</span>` : ''}
                </td>
                <td>${k.scopes.join(', ')}</td>
                <td>${when(k.createdAt)}</td>
                <td>${k.lastUsedAt ? when(k.lastUsedAt) : html`<span class="muted">never</span>`}</td>
                <td>${badge(k.revokedAt ? 'revoked' : 'active')}</td>
                <td>
                  ${
                    manage && !k.revokedAt
                      ? actionButton(caller, {
                          action: `/console/api-keys/${k.id}/revoke`,
                          label: `Revoke ${k.label || 'key'}`,
                          danger: true,
                        })
                      : ''
                  }
                </td>
              </tr>`,
          ),
        })}
        ${
          manage
            ? html`<form method="post" action="/console/api-keys" class="create-key">
                <h3>New API key</h3>
                <input type="hidden" name="csrf" value="${caller.session.csrf_token}" />
                <input type="hidden" name="once" value="${crypto.randomUUID()}" />
                <label>Label <input name="label" required maxlength="100" /></label>
                <fieldset>
                  <legend>Scopes</legend>
                  ${SCOPES.map((s) => html`<label class="check"><input type="checkbox" name="scopes" value="${s}" /> ${s}</label>`)}
                </fieldset>
                <button type="submit">Create key</button>
              </form>`
            : ''
        }
      </section>
      <section aria-labelledby="tokens-h">
        <h2 id="tokens-h">Upload tokens</h2>
        ${
          p.tokens.length === 0
            ? html`<p class="empty">${may(caller, 'tokens:mint') ? 'None minted.' : 'Listing tokens needs tokens:mint.'}</p>`
            : table({
                caption: 'Upload tokens, newest first',
                columns: ['Subject', 'Uploads', 'Limits', 'Expires', 'State', { hidden: 'Actions' }],
                rows: p.tokens.map(
                  (t) =>
                    html`<tr>
                      <td>
                        ${t.subject ?? html`<span class="muted">—</span>`}
                        <div class="muted key">${t.id}</div>
                      </td>
                      <td>${t.uploadsUsed}${t.maxUploads !== null ? ` of ${t.maxUploads}` : ''}</td>
                      <td class="muted">
                        ${[t.maxBytes !== null ? `≤ ${bytes(t.maxBytes)}` : '', t.allowedTypes?.join(', ') ?? ''].filter(Boolean).join('; ') || 'none'}
                      </td>
                      <td>${when(t.expiresAt)}</td>
                      <td>${badge(tokenState(t))}</td>
                      <td>
                        ${
                          tokenState(t) === 'active'
                            ? actionButton(caller, { action: `/console/upload-tokens/${t.id}/revoke`, label: 'Revoke token', danger: true })
                            : ''
                        }
                      </td>
                    </tr>`,
                ),
              })
        }
      </section>`,
  );
}

export function sessionsPage(caller: ConsoleCaller, p: { sessions: ConsoleSessionRow[]; notice?: string; error?: string }): Fragment {
  const live = (s: ConsoleSessionRow) => !s.revoked_at && s.expires_at > new Date();
  return page(
    { title: 'Sessions', caller, current: '/console/sessions', notice: p.notice, error: p.error },
    html`<p>Every console sign-in of this ${caller.kind === 'tenant' ? 'tenant' : 'operator'}, newest first.</p>
      ${table({
        caption: 'Console sessions',
        columns: ['Signed in', 'Key', 'Browser', 'Last seen', 'Expires', 'State', { hidden: 'Actions' }],
        rows: p.sessions.map(
          (s) =>
            html`<tr>
              <td>${when(s.created_at.toISOString())}</td>
              <td>${s.api_key_id ? html`<code>${s.api_key_id.slice(0, 8)}</code>` : 'operator'}</td>
              <td class="muted">${s.user_agent ?? ''}</td>
              <td>${when(s.last_seen_at.toISOString())}</td>
              <td>${when(s.expires_at.toISOString())}</td>
              <td>${badge(s.id === caller.session.id ? 'this_session' : s.revoked_at ? 'revoked' : live(s) ? 'active' : 'expired')}</td>
              <td>
                ${
                  live(s) && s.id !== caller.session.id
                    ? actionButton(caller, { action: `/console/sessions/${s.id}/revoke`, label: 'Revoke', danger: true })
                    : ''
                }
              </td>
            </tr>`,
        ),
      })}`,
  );
}
