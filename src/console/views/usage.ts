// Usage: the tenant's byte quotas (limit, used, reserved, left) and its usage per day, with
// the same figures as CSV. The operator's page shows every tenant's usage summed.
import { html } from 'hono/html';
import type { ConsoleCaller } from '../sessions';
import { bytes, page, table, type Fragment } from './kit';

export interface QuotaStanding {
  quotas: { maxStoredBytes: number | null; maxIngressBytesPerMonth: number | null; maxUploadsPerMonth: number | null };
  usage: { storedBytes: number; ingressBytesThisMonth: number; uploadsThisMonth: number; reservedBytes: number; reservedUploads: number };
  remaining: { storedBytes: number | null; ingressBytesThisMonth: number | null; uploadsThisMonth: number | null };
}

export interface UsageBucket {
  at: string;
  uploads: number;
  ingressBytes: number;
  importBytes: number;
  egressBytes: number;
  renders: number;
  storedBytes: number;
}

const count = (n: number) => n.toLocaleString('en');
const limitOf = (n: number | null, show: (n: number) => string) => (n === null ? html`<span class="muted">unlimited</span>` : show(n));

function quotaRows(s: QuotaStanding): Fragment[] {
  const rows: [string, number | null, number, number | null, (n: number) => string][] = [
    ['Stored bytes', s.quotas.maxStoredBytes, s.usage.storedBytes, s.remaining.storedBytes, bytes],
    ['Ingress this month', s.quotas.maxIngressBytesPerMonth, s.usage.ingressBytesThisMonth, s.remaining.ingressBytesThisMonth, bytes],
    ['Uploads this month', s.quotas.maxUploadsPerMonth, s.usage.uploadsThisMonth, s.remaining.uploadsThisMonth, count],
  ];
  return rows.map(
    ([name, limit, used, left, show]) =>
      html`<tr>
        <th scope="row">${name}</th>
        <td>${limitOf(limit, show)}</td>
        <td>${show(used)}</td>
        <td>${left === null ? html`<span class="muted">—</span>` : show(left)}</td>
      </tr>`,
  );
}

export function usageTable(buckets: UsageBucket[], caption: string): Fragment {
  return table({
    caption,
    columns: ['Day (UTC)', 'Uploads', 'Ingress', 'Imported', 'Egress', 'Renders', 'Stored at day end'],
    rows: [...buckets].reverse().map(
      (b) =>
        html`<tr>
          <td>${b.at.slice(0, 10)}</td>
          <td>${count(b.uploads)}</td>
          <td>${bytes(b.ingressBytes)}</td>
          <td>${bytes(b.importBytes)}</td>
          <td>${bytes(b.egressBytes)}</td>
          <td>${count(b.renders)}</td>
          <td>${bytes(b.storedBytes)}</td>
        </tr>`,
    ),
  });
}

export function usagePage(caller: ConsoleCaller, p: { standing: QuotaStanding; buckets: UsageBucket[] }): Fragment {
  const reserved = p.standing.usage.reservedUploads;
  return page(
    { title: 'Usage', caller, current: '/console/usage' },
    html`<section aria-labelledby="quotas-h">
        <h2 id="quotas-h">Quotas</h2>
        ${table({ caption: 'Byte quotas: limit, used and left', columns: ['Quota', 'Limit', 'Used', 'Left'], rows: quotaRows(p.standing) })}
        <p class="muted">
          ${
            reserved
              ? `${count(reserved)} uploads under way hold ${bytes(p.standing.usage.reservedBytes)} reserved (counted in what is left).`
              : 'No upload under way holds a reservation.'
          }
          Quotas are set by the operator.
        </p>
      </section>
      <section aria-labelledby="usage-h">
        <h2 id="usage-h">The last 30 days</h2>
        <p><a href="/console/usage.csv" download>Download as CSV</a></p>
        ${usageTable(p.buckets, 'Usage per day, newest first')}
      </section>`,
  );
}
