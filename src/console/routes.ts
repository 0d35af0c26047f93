// The console (/console): server-rendered pages for a signed-in tenant or operator. Reads and
// actions go through the API in-process (src/console/api.ts) as the session's key; each action
// button carries a key made when its page was drawn, sent as the action's Idempotency-Key.
import { usagePages } from './pages/usage';
import { Hono } from 'hono';
import { deleteCookie, getCookie, setCookie } from 'hono/cookie';
import { csrf } from 'hono/csrf';
import { secureHeaders } from 'hono/secure-headers';
import { revokeConsoleSession } from './queries';
import { buildWebApp } from '../web/routes';
import { credentialPages } from './pages/credentials';
import { eventPages } from './pages/events';
import { processingPages } from './pages/processing';
import { storagePages } from './pages/storage';
import { operatorPages } from './pages/operator';
import { uploadPages } from './pages/uploads';
import { html, notFound, problemPage, safeNext, tenantOnly, type C, type ConsoleDeps, type ConsoleEnv } from './respond';
import { ConsoleSessions } from './sessions';

export type { ConsoleDeps } from './respond';
import { signInPage } from './views/sign-in';

export function consoleRoutes(deps: ConsoleDeps) {
  const { api, sessions } = deps;
  const app = new Hono<ConsoleEnv>();
  const secure = (c: C) => deps.publicUrl?.startsWith('https:') || new URL(c.req.url).protocol === 'https:';
  const cookieName = (c: C) => (secure(c) ? '__Host-oncely_console' : 'oncely_console');

  app.use(
    secureHeaders({
      contentSecurityPolicy: {
        defaultSrc: ["'none'"],
        scriptSrc: ["'self'"],
        styleSrc: ["'self'"],
        imgSrc: ["'self'", 'data:'],
        connectSrc: ["'self'"],
        formAction: ["'self'"],
        frameAncestors: ["'none'"],
        baseUri: ["'none'"],
      },
      referrerPolicy: 'same-origin',
    }),
  );
  // Forms only from the console's own origin (Origin / Sec-Fetch-Site), besides each form's token.
  app.use(
    csrf({
      origin: (origin, c) => origin === new URL(c.req.url).origin || (!!deps.publicUrl && origin === new URL(deps.publicUrl).origin),
    }),
  );

  const asset = (part: 'js' | 'css', type: string) => async (c: C) =>
    c.body((await buildWebApp('console'))[part], 200, { 'content-type': `${type}; charset=utf-8`, 'cache-control': 'no-cache' });
  app.get('/assets/console.css', asset('css', 'text/css'));
  app.get('/assets/console.js', asset('js', 'text/javascript'));

  app.get('/sign-in', (c) => html(c, signInPage({ next: safeNext(c.req.query('next')) })));
  app.post('/sign-in', async (c) => {
    const form = await c.req.parseBody();
    const secret = typeof form.secret === 'string' ? form.secret.trim() : '';
    const signedIn = secret.length >= 16 ? await sessions.signIn(secret, c.req.header('user-agent')) : undefined;
    if (!signedIn) return html(c, signInPage({ error: 'That key is not valid (unknown, revoked or mistyped).' }), 401);
    setCookie(c, cookieName(c), signedIn.cookie, {
      path: '/',
      httpOnly: true,
      secure: secure(c),
      sameSite: 'Strict',
      maxAge: deps.ttlSeconds,
    });
    return c.redirect(safeNext(typeof form.next === 'string' ? form.next : undefined) ?? '/console', 303);
  });

  // Everything below needs a live session.
  app.use(async (c, next) => {
    const cookie = getCookie(c, cookieName(c));
    const caller = cookie ? await sessions.resolve(cookie) : undefined;
    if (!caller) {
      if (cookie) deleteCookie(c, cookieName(c), { path: '/', secure: secure(c) });
      if (c.req.method === 'GET') return c.redirect(`/console/sign-in?next=${encodeURIComponent(new URL(c.req.url).pathname)}`, 303);
      return html(c, signInPage({ error: 'Your session has ended; sign in again.' }), 401);
    }
    if (c.req.method === 'POST') {
      // A form carries the token in a field; a script (the upload pages) in a header.
      const isForm = /^(application\/x-www-form-urlencoded|multipart\/form-data)/i.test(c.req.header('content-type') ?? '');
      const token = isForm ? (await c.req.parseBody({ all: true })).csrf : c.req.header('x-csrf-token');
      if (!ConsoleSessions.csrfMatches(caller, typeof token === 'string' ? token : undefined))
        return c.text('The form is stale or did not come from this console; reload the page.', 403);
    }
    c.set('caller', caller);
    await next();
  });

  app.post('/sign-out', async (c) => {
    const caller = c.get('caller');
    await revokeConsoleSession(deps.pool, caller.session.tenant_id, caller.session.id);
    deleteCookie(c, cookieName(c), { path: '/', secure: secure(c) });
    return c.redirect('/console/sign-in', 303);
  });

  // The upload pages (/, /direct) mint their upload token through the session, so no key is
  // ever held by a page: they read the CSRF token here (same origin only: the cookie is
  // SameSite=Strict and no CORS answer allows credentials), then post for a token.
  app.get('/session', (c) => {
    const caller = tenantOnly(c);
    return c.json({
      csrfToken: caller.session.csrf_token,
      tenantId: caller.credential.tenantId,
      scopes: caller.credential.principal.scopes,
    });
  });
  app.post('/upload-tokens', async (c) => {
    const caller = tenantOnly(c);
    const body = (await c.req.json().catch(() => ({}))) as { importHosts?: unknown };
    const importHosts = Array.isArray(body.importHosts) && body.importHosts.length ? { importHosts: body.importHosts } : {};
    const res = await api.request(caller, 'POST', '/v1/upload-tokens', {
      idempotencyKey: c.req.header('idempotency-key') ?? `console-token-${crypto.randomUUID()}`,
      body: { expiresInSeconds: 3600, subject: 'upload-page', ...importHosts },
    });
    return new Response(res.body, {
      status: res.status,
      headers: { 'content-type': res.headers.get('content-type') ?? 'application/json' },
    });
  });

  app.get('/', (c) => c.redirect(c.get('caller').kind === 'tenant' ? '/console/uploads' : '/console/operator', 303));

  uploadPages(app, deps);
  eventPages(app, deps);
  processingPages(app, deps);
  storagePages(app, deps);
  credentialPages(app, deps);
  usagePages(app, deps);
  operatorPages(app, deps);

  app.notFound((c) => notFound(c as C));
  app.onError((err, c) => problemPage(c as C, err));
  return app;
}
