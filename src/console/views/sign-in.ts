// The sign-in page: one field for an API key (or the operator's ADMIN_TOKEN).
import { html } from 'hono/html';
import { page, type Fragment } from './kit';

export function signInPage(opts: { error?: string; next?: string } = {}): Fragment {
  return page(
    { title: 'Sign in', error: opts.error },
    html`<form method="post" action="/console/sign-in" class="sign-in">
      <p>
        Sign in with an API key. The console then acts with that key's scopes until you sign out, the session expires or the key is revoked;
        the key itself is not kept in this browser.
      </p>
      <label for="secret">API key (or the operator's token)</label>
      <input id="secret" name="secret" type="password" autocomplete="current-password" required minlength="16" />
      ${opts.next ? html`<input type="hidden" name="next" value="${opts.next}" />` : ''}
      <button type="submit">Sign in</button>
    </form>`,
  );
}
