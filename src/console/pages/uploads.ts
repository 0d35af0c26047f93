// The uploads list, an upload's page with its bytes passed through, its live refresh, and its actions.
import type { Hono } from 'hono';
import {
  act,
  dayStart,
  html,
  noticeOf,
  notFound,
  problemPage,
  shown,
  tenantOnly,
  UUID,
  type C,
  type ConsoleDeps,
  type ConsoleEnv,
} from '../respond';
import { may } from '../views/kit';
import { liveStream } from './live';
import { uploadsPerHour } from '../../db/queries/uploads';
import { uploadWorkflowId } from '../../temporal/ids';
import {
  uploadPage,
  type EventDetail,
  type KeyRequestsSeen,
  type RecordVersion,
  type StoredVariant,
  type UploadDetail,
} from '../views/upload';
import { uploadsPage, type UploadListFilter, type UploadSummary } from '../views/uploads';
import type { EventSummary } from '../views/events';

export function uploadPages(app: Hono<ConsoleEnv>, deps: ConsoleDeps): void {
  const { api } = deps;
  app.get('/uploads', async (c) => {
    const caller = tenantOnly(c);
    const q = c.req.query();
    const filter: UploadListFilter = {
      name: q.name,
      key: q.key,
      status: q.status,
      contentType: q.contentType,
      createdAfter: q.createdAfter,
      createdBefore: q.createdBefore,
    };
    const notice = noticeOf(c);
    try {
      const [list, hourly] = await Promise.all([
        api.get<{ items: UploadSummary[]; nextCursor: string | null }>(caller, '/v1/uploads', {
          fileNamePrefix: filter.name,
          keyPrefix: filter.key,
          status: filter.status,
          contentType: filter.contentType,
          createdAfter: dayStart(filter.createdAfter),
          createdBefore: dayStart(filter.createdBefore),
          cursor: q.cursor,
          limit: '50',
        }),
        may(caller, 'uploads:read') ? uploadsPerHour(deps.pool, caller.credential.tenantId) : Promise.resolve([]),
      ]);
      return html(c, uploadsPage(caller, { ...list, filter, hourly, notice }));
    } catch (err) {
      const problem = shown(err);
      return html(c, uploadsPage(caller, { items: [], nextCursor: null, filter, hourly: [], error: problem.message }), problem.status);
    }
  });

  const showUpload = async (c: C, id: string, extra: { notice?: string; error?: string } = {}, status = 200) => {
    const caller = tenantOnly(c);
    const upload = await api.get<UploadDetail>(caller, `/v1/uploads/${id}`);
    const summaries = await api
      .get<{ items: EventSummary[] }>(caller, '/v1/events', { uploadId: id, limit: '50' })
      .catch(() => ({ items: [] }));
    const events = await Promise.all(summaries.items.map((e) => api.get<EventDetail>(caller, `/v1/events/${e.id}`)));
    const versions =
      upload.version && upload.version > 1
        ? (await api.get<{ items: RecordVersion[] }>(caller, `/v1/uploads/${id}/versions`, { limit: '20' }).catch(() => ({ items: [] })))
            .items
        : [];
    const variants = upload.contentType.startsWith('image/')
      ? (await api.get<{ items: StoredVariant[] }>(caller, `/v1/uploads/${id}/images`, { limit: '50' }).catch(() => ({ items: [] }))).items
      : [];
    const requests = await api
      .get<KeyRequestsSeen>(caller, `/v1/idempotency-keys/${encodeURIComponent(upload.idempotencyKey)}/requests`)
      .catch(() => undefined);
    // The run's list view filtered by its ID: the UI then shows the latest run, whatever its run ID.
    const runUrl = deps.temporalUi
      ? `${deps.temporalUi.url}/namespaces/${encodeURIComponent(deps.temporalUi.namespace)}/workflows?query=${encodeURIComponent(
          `WorkflowId="${uploadWorkflowId(caller.credential.tenantId, upload.idempotencyKey)}"`,
        )}`
      : undefined;
    return html(c, uploadPage(caller, { upload, events, versions, variants, requests, runUrl, ...extra }), status);
  };

  app.get('/uploads/:id', async (c) => {
    const id = c.req.param('id');
    if (!UUID.test(id)) return notFound(c);
    try {
      return await showUpload(c, id, { notice: noticeOf(c) });
    } catch (err) {
      return problemPage(c, err);
    }
  });

  // Bytes through the API as the session's key: the preview, a rendition, the content.
  const passThrough = (path: (id: string, c: C) => string | Promise<string>) => async (c: C) => {
    const id = c.req.param('id')!;
    if (!UUID.test(id)) return notFound(c);
    const res = await api.request(tenantOnly(c), 'GET', await path(id, c));
    if (!res.ok) return new Response(null, { status: res.status });
    const headers: Record<string, string> = { 'cache-control': 'private, max-age=60' };
    for (const h of ['content-type', 'content-length', 'content-disposition', 'etag']) {
      const v = res.headers.get(h);
      if (v) headers[h] = v;
    }
    return new Response(res.body, { status: 200, headers });
  };
  app.get(
    '/uploads/:id/thumbnail',
    passThrough((id) => `/v1/uploads/${id}/renditions/thumbnail`),
  );
  app.get(
    '/uploads/:id/renditions/:name',
    passThrough((id, c) => `/v1/uploads/${id}/renditions/${encodeURIComponent(c.req.param('name')!)}`),
  );
  // A variant by its stored spec: through a URL the API signs (an option string may need one).
  app.get(
    '/uploads/:id/images/:spec',
    passThrough(async (id, c) => {
      const signed = await api.json<{ url: string }>(tenantOnly(c), 'POST', `/v1/uploads/${id}/image-urls`, {
        body: { spec: c.req.param('spec')!, expiresInSeconds: 60 },
      });
      const url = new URL(signed.url, 'http://console.invalid');
      return `${url.pathname}${url.search}`;
    }),
  );
  app.get(
    '/uploads/:id/content',
    passThrough((id) => `/v1/uploads/${id}/content`),
  );

  // A page whose state changes by itself (processing, erasure) is told to refresh.
  app.get('/uploads/:id/live', (c) => {
    const caller = tenantOnly(c);
    const id = c.req.param('id');
    return liveStream(c, 1000, async () => {
      const u = await api.get<UploadDetail>(caller, `/v1/uploads/${id}`);
      return `${u.status}/${u.processing.status}/${u.pipeline.steps.length}/${u.erasedAt}`;
    });
  });

  app.post('/uploads/:id/delete', (c) =>
    act(c, async (caller, once) => {
      await api.json(caller, 'DELETE', `/v1/uploads/${c.req.param('id')}`, { idempotencyKey: once });
      return `/console/uploads/${c.req.param('id')}?notice=deleted`;
    }),
  );
  app.post('/uploads/:id/hold', (c) =>
    act(c, async (caller, _once, form) => {
      const held = await api.json<{ storeHold: string }>(caller, 'PUT', `/v1/uploads/${c.req.param('id')}/legal-hold`, {
        body: { reason: String(form.reason ?? '') },
      });
      return `/console/uploads/${c.req.param('id')}?notice=${held.storeHold === 'placed' ? 'held-in-store' : 'held'}`;
    }),
  );
  app.post('/uploads/:id/release', (c) =>
    act(c, async (caller) => {
      await api.json(caller, 'DELETE', `/v1/uploads/${c.req.param('id')}/legal-hold`);
      return `/console/uploads/${c.req.param('id')}?notice=released`;
    }),
  );
  app.post('/uploads/:id/restore', (c) =>
    act(c, async (caller) => {
      await api.json(caller, 'POST', `/v1/uploads/${c.req.param('id')}/restore`);
      return `/console/uploads/${c.req.param('id')}?notice=restored`;
    }),
  );
  app.post('/uploads/:id/reprocess', (c) =>
    act(c, async (caller, once) => {
      const upload = await api.get<UploadDetail>(caller, `/v1/uploads/${c.req.param('id')}`);
      await api.json(caller, 'POST', `/v1/pipelines/${encodeURIComponent(upload.pipeline.name)}/reprocess`, {
        idempotencyKey: once,
        body: { filter: { uploadIds: [upload.uploadId] }, concurrency: 1 },
      });
      return `/console/uploads/${upload.uploadId}?notice=reprocessing`;
    }),
  );
}
