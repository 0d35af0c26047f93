// The event log (failed deliveries first), one event's page, and the endpoints with their health.
import { html } from 'hono/html';
import type { ConsoleCaller } from '../sessions';
import { actionButton, badge, facts, may, page, progress, query, table, when, type Fragment } from './kit';
import { eventBlock, type EventDetail } from './upload';

export interface EventSummary {
  id: string;
  type: string;
  /** Null: a storage migration's event. */
  uploadId: string | null;
  createdAt: string;
}

export interface Endpoint {
  id: string;
  url: string;
  description?: string;
  enabled: boolean;
  disabledReason: string | null;
  createdAt: string;
}

function eventTable(items: EventSummary[], caption: string): Fragment {
  return table({
    caption,
    showCaption: true,
    columns: ['Event', 'Upload', 'Created'],
    rows: items.map(
      (e) =>
        html`<tr>
          <td><a href="/console/events/${e.id}">${e.type}</a></td>
          <td>
            ${
              e.uploadId
                ? html`<a href="/console/uploads/${e.uploadId}"><code>${e.uploadId.slice(0, 8)}</code></a>`
                : html`<span class="muted">none</span>`
            }
          </td>
          <td>${when(e.createdAt)}</td>
        </tr>`,
    ),
  });
}

export function eventsPage(
  caller: ConsoleCaller,
  p: {
    failed: EventSummary[];
    items: EventSummary[];
    nextCursor: string | null;
    type?: string;
    endpoints: Endpoint[];
    notice?: string;
    error?: string;
  },
): Fragment {
  return page(
    { title: 'Events', caller, current: '/console/events', notice: p.notice, error: p.error, live: '/console/events/live' },
    html`<section aria-labelledby="endpoints-h">
        <h2 id="endpoints-h">Endpoints</h2>
        ${
          p.endpoints.length === 0
            ? html`<p class="empty">No webhook endpoint is registered.</p>`
            : html`<ul class="endpoints">
                ${p.endpoints.map(
                  (e) =>
                    html`<li>
                      ${badge(e.enabled ? 'healthy' : 'disabled')}
                      <code>${e.url}</code> ${e.description ? html`<span class="muted">${e.description}</span>` : ''}
                      ${e.disabledReason ? html`<div class="muted">${e.disabledReason}</div>` : ''}
                      ${
                        may(caller, 'webhooks:manage')
                          ? actionButton(caller, { action: `/console/endpoints/${e.id}/recover`, label: 'Redeliver failed events' })
                          : ''
                      }
                    </li>`,
                )}
              </ul>`
        }
      </section>
      <section aria-labelledby="failed-h">
        <h2 id="failed-h">Failed deliveries</h2>
        ${p.failed.length === 0 ? html`<p class="empty">Every delivery succeeded.</p>` : eventTable(p.failed, 'Events with a delivery that failed')}
      </section>
      <section aria-labelledby="all-h">
        <h2 id="all-h">All events</h2>
        <form method="get" action="/console/events" class="filters">
          <label>Type <input name="type" type="search" value="${p.type ?? ''}" placeholder="upload.processed" /></label>
          <button type="submit">Filter</button>
        </form>
        ${p.items.length === 0 ? html`<p class="empty">No events.</p>` : eventTable(p.items, 'Events, newest first')}
        ${p.nextCursor ? html`<p><a rel="next" href="/console/events${query({ type: p.type, cursor: p.nextCursor })}">Older events →</a></p>` : ''}
      </section>`,
  );
}

export function eventPage(caller: ConsoleCaller, p: { event: EventDetail; notice?: string; error?: string }): Fragment {
  return page(
    { title: `Event ${p.event.type}`, caller, current: '/console/events', notice: p.notice, error: p.error },
    html`<p>
        ${
          p.event.uploadId
            ? html`Of upload <a href="/console/uploads/${p.event.uploadId}"><code>${p.event.uploadId}</code></a
                >.`
            : html`Of storage migration <code>${String(p.event.payload?.data?.migrationId ?? '')}</code>.`
        }
      </p>
      ${eventBlock(caller, p.event)}`,
  );
}

/** A recovery of an endpoint's failed deliveries (GET /v1/webhook-endpoints/{id}/recoveries/{recoveryId}). */
export interface Recovery {
  recoveryId: string;
  endpointId: string;
  since: string;
  until: string;
  found: number;
  delivered: number;
  failed: number;
  done: boolean;
}

/** A recovery's progress, refreshed while it runs. */
export function recoveryPage(caller: ConsoleCaller, p: { recovery: Recovery; live: string; notice?: string }): Fragment {
  const r = p.recovery;
  return page(
    { title: 'Recovery', caller, current: '/console/events', notice: p.notice, live: r.done ? undefined : p.live },
    html`<section aria-labelledby="recovery-h">
      <h2 id="recovery-h">Redelivering the endpoint's failed events</h2>
      ${facts([
        ['State', badge(r.done ? 'completed' : 'running')],
        ['Events failed between', html`${when(r.since)} and ${when(r.until)}`],
        ['Found', r.found],
        ['Delivered', progress(r.delivered, r.found, 'Delivered')],
        ['Failed again', r.failed],
      ])}
      <p><a href="/console/events">Back to the events</a></p>
    </section>`,
  );
}
