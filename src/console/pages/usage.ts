// The tenant's usage page (GET /v1/quotas and /v1/usage through the in-process API) and its CSV.
import type { Hono } from 'hono';
import { html, tenantOnly, type ConsoleDeps, type ConsoleEnv } from '../respond';
import { usagePage, type QuotaStanding, type UsageBucket } from '../views/usage';

export function usagePages(app: Hono<ConsoleEnv>, deps: ConsoleDeps): void {
  const { api } = deps;
  app.get('/usage', async (c) => {
    const caller = tenantOnly(c);
    const [standing, usage] = await Promise.all([
      api.get<QuotaStanding>(caller, '/v1/quotas'),
      api.get<{ buckets: UsageBucket[] }>(caller, '/v1/usage', { granularity: 'day' }),
    ]);
    return html(c, usagePage(caller, { standing, buckets: usage.buckets }));
  });
  app.get('/usage.csv', async (c) => {
    const caller = tenantOnly(c);
    const res = await api.request(caller, 'GET', '/v1/usage?granularity=day&format=csv');
    return new Response(res.body, {
      status: res.status,
      headers: {
        'content-type': res.headers.get('content-type') ?? 'text/csv',
        'content-disposition': res.headers.get('content-disposition') ?? 'attachment',
      },
    });
  });
}
