// Storage: the tenant's targets and its migrations, with pause, resume and cancel.
import type { Hono } from 'hono';
import { act, html, noticeOf, problemPage, tenantOnly, type ConsoleDeps, type ConsoleEnv } from '../respond';
import type { ConsoleCaller } from '../sessions';
import { storagePage, type Migration, type Target } from '../views/storage';
import { liveStream } from './live';

export function storagePages(app: Hono<ConsoleEnv>, deps: ConsoleDeps): void {
  const { api } = deps;
  const read = async (caller: ConsoleCaller & { kind: 'tenant' }) => {
    const [targets, migrations] = await Promise.all([
      api.get<{ data: Target[]; defaultTarget: string | null; residency: string | null }>(caller, '/v1/storage-targets', { limit: '100' }),
      // Creation order: the newest 20 of the last page, newest first.
      api.get<{ data: Migration[] }>(caller, '/v1/storage-migrations', { limit: '100' }).then((r) => r.data.slice(-20).reverse()),
    ]);
    return { targets: targets.data, defaultTarget: targets.defaultTarget, residency: targets.residency, migrations };
  };

  app.get('/storage', async (c) => {
    try {
      return html(c, storagePage(tenantOnly(c), { ...(await read(tenantOnly(c))), notice: noticeOf(c) }));
    } catch (err) {
      return problemPage(c, err);
    }
  });
  app.get('/storage/live', (c) => {
    const caller = tenantOnly(c);
    return liveStream(c, 2000, async () =>
      JSON.stringify((await read(caller)).migrations.map((m) => [m.state, m.moved, m.skipped, m.failed])),
    );
  });
  for (const action of ['pause', 'resume', 'cancel'] as const)
    app.post(`/storage-migrations/:id/${action}`, (c) =>
      act(c, async (caller, once) => {
        await api.json(caller, 'POST', `/v1/storage-migrations/${encodeURIComponent(c.req.param('id'))}/${action}`, {
          idempotencyKey: once,
        });
        return `/console/storage?notice=${action === 'cancel' ? 'migration-cancelled' : action === 'pause' ? 'migration-paused' : 'resumed'}`;
      }),
    );
}
