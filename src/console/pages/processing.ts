// Processing: pipelines, presets, re-processing jobs and import batches, with their controls.
import type { Hono } from 'hono';
import { act, html, noticeOf, problemPage, tenantOnly, type ConsoleDeps, type ConsoleEnv } from '../respond';
import type { ConsoleCaller } from '../sessions';
import { may } from '../views/kit';
import { processingPage, type ImportBatch, type Pipeline, type Preset, type ReprocessJob } from '../views/processing';
import { liveStream } from './live';

/** The newest of a creation-ordered list: its last page (lists here are short; 100 is plenty). */
const newestFirst = <T>(items: T[]) => items.slice(-20).reverse();

export function processingPages(app: Hono<ConsoleEnv>, deps: ConsoleDeps): void {
  const { api } = deps;
  const read = async (caller: ConsoleCaller & { kind: 'tenant' }) => {
    const pipelinesScope = may(caller, 'pipelines:manage');
    const [pipelines, presets, jobs, batches] = await Promise.all([
      pipelinesScope ? api.get<{ data: Pipeline[] }>(caller, '/v1/pipelines', { limit: '100' }).then((r) => r.data) : [],
      pipelinesScope ? api.get<{ data: Preset[] }>(caller, '/v1/image-presets', { limit: '100' }).then((r) => r.data) : [],
      pipelinesScope
        ? api.get<{ items: ReprocessJob[] }>(caller, '/v1/reprocess-jobs', { limit: '100' }).then((r) => newestFirst(r.items))
        : [],
      may(caller, 'imports:create')
        ? api.get<{ items: ImportBatch[] }>(caller, '/v1/import-batches', { limit: '100' }).then((r) => newestFirst(r.items))
        : [],
    ]);
    return { pipelines, presets, jobs, batches };
  };

  app.get('/processing', async (c) => {
    const caller = tenantOnly(c);
    try {
      return html(c, processingPage(caller, { ...(await read(caller)), notice: noticeOf(c) }));
    } catch (err) {
      return problemPage(c, err);
    }
  });
  app.get('/processing/live', (c) => {
    const caller = tenantOnly(c);
    return liveStream(c, 2000, async () => {
      const { jobs, batches } = await read(caller);
      return JSON.stringify([jobs.map((j) => [j.state, j.done, j.failed, j.skipped]), batches.map((b) => [b.state, b.done, b.failed])]);
    });
  });
  app.post('/reprocess-jobs/:id/cancel', (c) =>
    act(c, async (caller) => {
      await api.json(caller, 'POST', `/v1/reprocess-jobs/${encodeURIComponent(c.req.param('id'))}/cancel`, {});
      return '/console/processing?notice=cancelled';
    }),
  );
  for (const action of ['pause', 'resume', 'cancel'] as const)
    app.post(`/import-batches/:id/${action}`, (c) =>
      act(c, async (caller, once) => {
        await api.json(caller, 'POST', `/v1/import-batches/${encodeURIComponent(c.req.param('id'))}/${action}`, { idempotencyKey: once });
        return `/console/processing?notice=${action === 'cancel' ? 'cancelled' : action === 'pause' ? 'paused' : 'resumed'}`;
      }),
    );
}
