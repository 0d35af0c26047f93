// API keys (list, create, revoke) and console sessions (list, revoke).
import type { OpenAPIHono } from '@hono/zod-openapi';
import type { ConsoleCaller } from '../sessions';
import { act, html, noticeOf, notFound, onceOf, shown, tenantOnly, type ConsoleDeps, type ConsoleEnv } from '../respond';
import { may } from '../views/kit';
import { listConsoleSessions, revokeConsoleSession } from '../../db/queries/console-sessions';
import { credentialsPage, sessionsPage, type ApiKey } from '../views/credentials';

export function credentialPages(app: OpenAPIHono<ConsoleEnv>, deps: ConsoleDeps): void {
  const { api } = deps;
  const listKeys = (caller: ConsoleCaller) =>
    may(caller, 'keys:manage')
      ? api.get<{ data: ApiKey[] }>(caller, '/v1/api-keys', { limit: '100' }).then((r) => r.data)
      : Promise.resolve([]);
  app.get('/credentials', async (c) => {
    const caller = tenantOnly(c);
    return html(c, credentialsPage(caller, { keys: await listKeys(caller), notice: noticeOf(c) }));
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
      return html(c, credentialsPage(caller, { keys: await listKeys(caller), created }));
    } catch (err) {
      const problem = shown(err);
      return html(c, credentialsPage(caller, { keys: await listKeys(caller), error: problem.message }), problem.status);
    }
  });
  app.post('/api-keys/:id/revoke', (c) =>
    act(c, async (caller, once) => {
      await api.json(caller, 'DELETE', `/v1/api-keys/${encodeURIComponent(c.req.param('id'))}`, { idempotencyKey: once });
      return '/console/credentials?notice=revoked';
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
