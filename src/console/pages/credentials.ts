// API keys (list, create, revoke), upload tokens (list, revoke) and console sessions (list, revoke).
import type { Hono } from 'hono';
import type { ConsoleCaller } from '../sessions';
import { ApiError } from '../api';
import { act, html, noticeOf, notFound, onceOf, shown, tenantOnly, type ConsoleDeps, type ConsoleEnv } from '../respond';
import { may } from '../views/kit';
import { listConsoleSessions, revokeConsoleSession } from '../queries';
import { credentialsPage, sessionsPage, type ApiKey, type UploadToken } from '../views/credentials';

/** A revocation's redirect: a second press (the first already revoked it) finds nothing active, which is the same outcome. */
async function revoked(revoke: () => Promise<unknown>): Promise<string> {
  try {
    await revoke();
    return '/console/credentials?notice=revoked';
  } catch (err) {
    if (err instanceof ApiError && err.problem.status === 404) return '/console/credentials?notice=not-active';
    throw err;
  }
}

export function credentialPages(app: Hono<ConsoleEnv>, deps: ConsoleDeps): void {
  const { api } = deps;
  const listKeys = (caller: ConsoleCaller) =>
    may(caller, 'keys:manage')
      ? api.get<{ data: ApiKey[] }>(caller, '/v1/api-keys', { limit: '100' }).then((r) => r.data)
      : Promise.resolve([]);
  const listTokens = (caller: ConsoleCaller) =>
    may(caller, 'tokens:mint')
      ? api.get<{ data: UploadToken[] }>(caller, '/v1/upload-tokens', { limit: '100' }).then((r) => r.data.slice(-50).reverse())
      : Promise.resolve([]);
  const lists = async (caller: ConsoleCaller) => {
    const [keys, tokens] = await Promise.all([listKeys(caller), listTokens(caller)]);
    return { keys, tokens };
  };
  app.get('/credentials', async (c) => {
    const caller = tenantOnly(c);
    return html(c, credentialsPage(caller, { ...(await lists(caller)), notice: noticeOf(c) }));
  });
  app.post('/api-keys', async (c) => {
    const caller = tenantOnly(c);
    const form = await c.req.parseBody({ all: true });
    const scopes = ([] as unknown[]).concat(form.scopes ?? []).filter((s): s is string => typeof s === 'string');
    const label = typeof form.label === 'string' ? form.label : '';
    try {
      const created = await api.json<{ key: string; label: string }>(caller, 'POST', '/v1/api-keys', {
        idempotencyKey: onceOf(form),
        body: { label, ...(scopes.length ? { scopes } : {}) },
      });
      return html(c, credentialsPage(caller, { ...(await lists(caller)), created }));
    } catch (err) {
      const problem = shown(err);
      return html(c, credentialsPage(caller, { ...(await lists(caller)), error: problem.message }), problem.status);
    }
  });
  app.post('/api-keys/:id/revoke', (c) =>
    act(c, async (caller, once) => {
      return revoked(() => api.json(caller, 'DELETE', `/v1/api-keys/${encodeURIComponent(c.req.param('id'))}`, { idempotencyKey: once }));
    }),
  );
  app.post('/upload-tokens/:id/revoke', (c) =>
    act(c, async (caller) => {
      return revoked(() => api.json(caller, 'DELETE', `/v1/upload-tokens/${encodeURIComponent(c.req.param('id'))}`));
    }),
  );

  // A tenant's sessions: every one with keys:manage, else those of the session's own key.
  const visibleSessions = async (caller: ConsoleCaller) => {
    const all = await listConsoleSessions(deps.pool, caller.session.tenant_id);
    return caller.kind === 'operator' || may(caller, 'keys:manage') ? all : all.filter((s) => s.api_key_id === caller.session.api_key_id);
  };
  app.get('/sessions', async (c) => {
    const caller = c.get('caller');
    return html(c, sessionsPage(caller, { sessions: await visibleSessions(caller), notice: noticeOf(c) }));
  });
  app.post('/sessions/:id/revoke', async (c) => {
    const caller = c.get('caller');
    const id = c.req.param('id');
    if (!(await visibleSessions(caller)).some((s) => s.id === id)) return notFound(c);
    await revokeConsoleSession(deps.pool, caller.session.tenant_id, id);
    return c.redirect('/console/sessions?notice=revoked', 303);
  });
}
