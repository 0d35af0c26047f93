// The operator's page (an ADMIN_TOKEN session): tenants through /admin, task queues from Temporal.
import type { Hono } from 'hono';
import { countOpenConsoleSessions } from '../queries';
import { describeQueues } from '../queues';
import { ApiError } from '../api';
import { act, html, noticeOf, problemPage, type C, type ConsoleDeps, type ConsoleEnv } from '../respond';
import type { ConsoleCaller } from '../sessions';
import { operatorPage, type TenantSummary } from '../views/operator';
import type { UsageBucket } from '../views/usage';

function operatorOnly(c: C): ConsoleCaller & { kind: 'operator' } {
  const caller = c.get('caller');
  if (caller.kind !== 'operator')
    throw new ApiError({ status: 403, code: 'not_operator', title: 'Only the operator (ADMIN_TOKEN) sees this page.' });
  return caller;
}

export function operatorPages(app: Hono<ConsoleEnv>, deps: ConsoleDeps): void {
  const { api } = deps;
  app.get('/operator', async (c) => {
    try {
      const caller = operatorOnly(c);
      const [tenants, queues, openSessions, usage] = await Promise.all([
        api.get<{ items: TenantSummary[]; nextCursor: string | null }>(caller, '/admin/tenants', {
          cursor: c.req.query('cursor'),
          limit: '50',
        }),
        deps.temporal ? describeQueues(deps.temporal.client, deps.temporal.namespace, deps.temporal.queues) : Promise.resolve([]),
        countOpenConsoleSessions(deps.pool),
        api.get<{ buckets: UsageBucket[] }>(caller, '/admin/usage', { granularity: 'day' }),
      ]);
      return html(
        c,
        operatorPage(caller, {
          tenants: tenants.items,
          nextCursor: tenants.nextCursor,
          queues,
          openSessions,
          usage: usage.buckets,
          notice: noticeOf(c),
        }),
      );
    } catch (err) {
      return problemPage(c, err);
    }
  });
  // A tenant's deletion is one run (`tenant-delete/{id}`): sent again, it attaches to it.
  app.post('/operator/tenants/:id/delete', (c) =>
    act(
      c,
      async (caller) => {
        await api.json(caller, 'DELETE', `/admin/tenants/${encodeURIComponent(c.req.param('id'))}`, { headers: { prefer: 'wait=1' } });
        return '/console/operator?notice=tenant-deleting';
      },
      operatorOnly,
    ),
  );
}
