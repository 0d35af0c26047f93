// The operator's page: every tenant with its settings, status and usage (and its deletion),
// the task queues with their workers and backlog, open console sessions, pending deletions.
import { html } from 'hono/html';
import type { QueueState } from '../queues';
import type { ConsoleCaller } from '../sessions';
import { actionButton, badge, bytes, page, query, table, when, type Fragment } from './kit';
import { usageTable, type UsageBucket } from './usage';

export interface TenantSummary {
  tenantId: string;
  name: string;
  status: string;
  retentionDays: number | null;
  imageSpecs: string;
  dedupe: string;
  closedAt: string | null;
  usage: { uploads: number; bytes: number; pendingDeletions: number };
}

export function operatorPage(
  caller: ConsoleCaller,
  p: {
    tenants: TenantSummary[];
    nextCursor: string | null;
    queues: QueueState[];
    openSessions: number;
    usage: UsageBucket[];
    notice?: string;
    error?: string;
  },
): Fragment {
  const pending = p.tenants.reduce((n, t) => n + t.usage.pendingDeletions, 0);
  return page(
    { title: 'Operators', caller, current: '/console/operator', notice: p.notice, error: p.error },
    html`<ul class="figures">
        <li><strong>${p.openSessions}</strong> open console sessions</li>
        <li><strong>${pending}</strong> uploads deleted, not yet erased (tenants listed)</li>
        <li><strong>${p.tenants.filter((t) => t.status === 'deleting').length}</strong> tenants being deleted</li>
      </ul>
      <section aria-labelledby="queues-h">
        <h2 id="queues-h">Task queues</h2>
        ${table({
          caption: 'Task queues, their workers and backlog',
          columns: ['Queue', 'Kind', 'Workers polling', 'Backlog'],
          rows: p.queues.map(
            (q) =>
              html`<tr>
                <td>${q.name}</td>
                <td>${q.kind}</td>
                <td>
                  ${q.pollers.length}
                  ${q.pollers.length ? html`<div class="muted">${q.pollers.map((x) => x.identity).join(', ')}</div>` : ''}
                  ${q.error ? html`<div class="muted">${q.error}</div>` : ''}
                </td>
                <td>${q.backlog ?? '—'}</td>
              </tr>`,
          ),
        })}
      </section>
      <section aria-labelledby="tenants-h">
        <h2 id="tenants-h">Tenants</h2>
        ${table({
          caption: 'Tenants in creation order',
          columns: ['Tenant', 'Status', 'Settings', 'Uploads', 'Bytes', { hidden: 'Actions' }],
          rows: p.tenants.map(
            (t) =>
              html`<tr>
                <td>
                  ${t.name || html`<span class="muted">(erased)</span>`}
                  <div class="muted key">${t.tenantId}</div>
                </td>
                <td>${badge(t.status)} ${t.closedAt ? when(t.closedAt) : ''}</td>
                <td class="muted">
                  retention ${t.retentionDays === null ? 'none' : `${t.retentionDays} d`}, image specs ${t.imageSpecs}, dedupe ${t.dedupe}
                </td>
                <td>
                  ${t.usage.uploads.toLocaleString('en')}${t.usage.pendingDeletions ? html` <span class="muted">(${t.usage.pendingDeletions} erasing)</span>` : ''}
                </td>
                <td>${bytes(t.usage.bytes)}</td>
                <td>
                  ${
                    t.status === 'active'
                      ? actionButton(caller, {
                          action: `/console/operator/tenants/${t.tenantId}/delete`,
                          label: `Delete ${t.name}`,
                          danger: true,
                        })
                      : ''
                  }
                </td>
              </tr>`,
          ),
        })}
        ${p.nextCursor ? html`<p><a rel="next" href="/console/operator${query({ cursor: p.nextCursor })}">More tenants →</a></p>` : ''}
      </section>
      <section aria-labelledby="usage-h">
        <h2 id="usage-h">Usage, every tenant, the last 30 days</h2>
        ${usageTable(p.usage, 'Usage per day across tenants, newest first')}
      </section>`,
  );
}
