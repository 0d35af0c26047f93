// The console's page frame and the small pieces every page uses. Templates are Hono's
// `html` helper: every interpolated value is escaped; nothing on a page is inline script.
import { randomUUID } from 'node:crypto';
import { html } from 'hono/html';
import type { HtmlEscapedString } from 'hono/utils/html';
import type { Scope } from '../../credentials';
import type { ConsoleCaller } from '../sessions';

export type Fragment = HtmlEscapedString | Promise<HtmlEscapedString> | string;

/** The console's pages; `scope`: the one a page's reads need (shown only to a key that holds it). */
export const NAV = [
  { href: '/console/uploads', label: 'Uploads', tenant: true },
  { href: '/console/events', label: 'Events', tenant: true, scope: 'webhooks:manage' },
  { href: '/console/processing', label: 'Processing', tenant: true },
  { href: '/console/storage', label: 'Storage', tenant: true, scope: 'storage:manage' },
  { href: '/console/credentials', label: 'Credentials', tenant: true },
  { href: '/console/usage', label: 'Usage', tenant: true },
  { href: '/console/sessions', label: 'Sessions', tenant: false },
  { href: '/console/operator', label: 'Operators', tenant: false, operator: true },
] as const;

export interface PageFrame {
  title: string;
  caller?: ConsoleCaller;
  /** The nav entry shown as current. */
  current?: string;
  notice?: string;
  error?: string;
  /** Pages whose state changes by itself subscribe to this event stream (console.js). */
  live?: string;
}

export function page(frame: PageFrame, body: Fragment): Fragment {
  const { caller } = frame;
  const who =
    caller?.kind === 'tenant' && caller.credential.principal.kind === 'key'
      ? `key “${caller.credential.principal.label || caller.credential.principal.id.slice(0, 8)}”`
      : caller
        ? 'the operator'
        : '';
  const nav = caller
    ? NAV.filter((n) =>
        'operator' in n ? caller.kind === 'operator' : !n.tenant || (caller.kind === 'tenant' && (!('scope' in n) || may(caller, n.scope))),
      )
    : [];
  return html`<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8" />
    <meta name="viewport" content="width=device-width, initial-scale=1" />
    <title>${frame.title} · Oncely console</title>
    <link rel="stylesheet" href="/console/assets/console.css" />
    <script type="module" src="/console/assets/console.js"></script>
  </head>
  <body${frame.live ? html` data-live="${frame.live}"` : ''}>
    <a class="skip" href="#main">Skip to content</a>
    <header class="top">
      <a class="brand" href="/console">Oncely</a>
      ${
        nav.length
          ? html`<nav aria-label="Console">
              <ul>
                ${nav.map(
                  (n) => html`<li><a href="${n.href}" ${frame.current === n.href ? html` aria-current="page"` : ''}>${n.label}</a></li>`,
                )}
              </ul>
            </nav>`
          : ''
      }
      ${
        caller
          ? html`<div class="who">
              <span>Signed in with ${who}</span>
              <form method="post" action="/console/sign-out">
                <input type="hidden" name="csrf" value="${caller.session.csrf_token}" />
                <button type="submit">Sign out</button>
              </form>
            </div>`
          : ''
      }
    </header>
    <main id="main">
      <h1>${frame.title}</h1>
      ${frame.notice ? html`<p class="notice" role="status">${frame.notice}</p>` : ''}
      ${frame.error ? html`<p class="error" role="alert">${frame.error}</p>` : ''} ${body}
    </main>
  </body>
</html>`;
}

/** Whether the signed-in key holds `scope` (an operator holds none of the tenant scopes). */
export function may(caller: ConsoleCaller, scope: Scope): boolean {
  return caller.kind === 'tenant' && caller.credential.principal.scopes.includes(scope);
}

/**
 * A button that acts once: the form carries the session's CSRF token and a key made when the
 * page was drawn, which the action sends as its Idempotency-Key, so a double click or a
 * resubmitted form replays the first answer instead of acting twice.
 */
export function actionButton(
  caller: ConsoleCaller,
  p: { action: string; label: string; danger?: boolean; fields?: Record<string, string>; describedBy?: string },
): Fragment {
  return html`<form method="post" action="${p.action}" class="action">
    <input type="hidden" name="csrf" value="${caller.session.csrf_token}" />
    <input type="hidden" name="once" value="${randomUUID()}" />
    ${Object.entries(p.fields ?? {}).map(([k, v]) => html`<input type="hidden" name="${k}" value="${v}" />`)}
    <button type="submit" ${p.danger ? html` class="danger"` : ''}>${p.label}</button>
  </form>`;
}

const UNITS = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];

export function bytes(n: number): string {
  let v = n;
  let u = 0;
  while (v >= 1024 && u < UNITS.length - 1) {
    v /= 1024;
    u++;
  }
  return `${u === 0 ? v : v.toFixed(v < 10 ? 1 : 0)} ${UNITS[u]}`;
}

/** A time as a `<time>` element: the instant in its attribute, a short UTC form as text. */
export function when(iso: string | null | undefined): Fragment {
  if (!iso) return html`<span class="muted">—</span>`;
  return html`<time datetime="${iso}">${iso.slice(0, 19).replace('T', ' ')}Z</time>`;
}

/** A status as a coloured badge (the colour class is the status itself). */
export function badge(status: string | null | undefined): Fragment {
  const s = status ?? 'unknown';
  return html`<span class="badge badge-${s.replace(/[^a-z_]/g, '')}">${s.replaceAll('_', ' ')}</span>`;
}

/** A definition list of label → value, leaving out empty values. */
export function facts(rows: [string, Fragment | number | null | undefined][]): Fragment {
  return html`<dl class="facts">
    ${rows
      .filter(([, v]) => v !== null && v !== undefined && v !== '')
      .map(
        ([k, v]) =>
          html`<dt>${k}</dt>
            <dd>${v}</dd>`,
      )}
  </dl>`;
}

/** A query string for a link from the values given (empty ones dropped). */
export function query(values: Record<string, string | undefined>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(values)) if (v) q.set(k, v);
  const s = q.toString();
  return s ? `?${s}` : '';
}

/** A column heading; `{ hidden }` is read by screen readers only (a preview or actions column). */
export type Column = string | { hidden: string };

/** A data table: its caption (for screen readers only unless `showCaption`), headings, and rows (`<tr>`s). */
export function table(p: { caption: string; showCaption?: boolean; columns: Column[]; rows: Fragment[]; className?: string }): Fragment {
  return html`<table${p.className ? html` class="${p.className}"` : ''}>
    <caption${p.showCaption ? '' : html` class="visually-hidden"`}>
      ${p.caption}
    </caption>
    <thead>
      <tr>
        ${p.columns.map((c) =>
          typeof c === 'string'
            ? html`<th scope="col">${c}</th>`
            : html`<th scope="col"><span class="visually-hidden">${c.hidden}</span></th>`,
        )}
      </tr>
    </thead>
    <tbody>
      ${p.rows}
    </tbody>
  </table>`;
}

/** A bar of `done` out of `total`, with the figures beside it. */
export function progress(done: number, total: number, label: string): Fragment {
  return html`<progress max="${Math.max(total, 1)}" value="${done}" aria-label="${label}">${done} of ${total}</progress>
    <span class="muted">${done} / ${total}</span>`;
}
