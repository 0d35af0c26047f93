// The uploads list: the API's filters plus search by file name or key prefix, a page at a time.
import { html } from 'hono/html';
import type { ConsoleCaller } from '../sessions';
import { badge, bytes, page, query, table, when, type Fragment } from './kit';
import { UPLOAD_STATUSES } from '../../db/queries/uploads';

export interface UploadSummary {
  uploadId: string;
  status: string;
  idempotencyKey: string;
  fileName: string | null;
  contentType: string;
  bytes: number;
  createdAt: string;
  processing: { status: string | null };
  arrival?: string | null;
}

export interface UploadListFilter {
  name?: string;
  key?: string;
  status?: string;
  contentType?: string;
  createdAfter?: string;
  createdBefore?: string;
}

const STATUSES = ['', ...UPLOAD_STATUSES];

export function uploadsPage(
  caller: ConsoleCaller,
  p: { items: UploadSummary[]; nextCursor: string | null; filter: UploadListFilter; hourly: number[]; notice?: string; error?: string },
): Fragment {
  const f = p.filter;
  const field = (name: keyof UploadListFilter, label: string, type = 'search') =>
    html`<label>${label} <input name="${name}" type="${type}" value="${f[name] ?? ''}" /></label>`;
  return page(
    { title: 'Uploads', caller, current: '/console/uploads', notice: p.notice, error: p.error },
    html`<section aria-label="Uploads per hour">${sparkline(p.hourly)}</section>
      <form method="get" action="/console/uploads" class="filters" role="search">
        ${field('name', 'File name starts with')} ${field('key', 'Key starts with')}
        <label
          >Status
          <select name="status">
            ${STATUSES.map((s) => html`<option value="${s}" ${s === (f.status ?? '') ? html` selected` : ''}>${s || 'any'}</option>`)}
          </select></label
        >
        ${field('contentType', 'Type (e.g. image/*)')} ${field('createdAfter', 'Created after', 'date')}
        ${field('createdBefore', 'Created before', 'date')}
        <button type="submit">Filter</button>
      </form>
      ${
        p.items.length === 0
          ? html`<p class="empty">No uploads match.</p>`
          : table({
              caption: 'Uploads, newest first',
              className: 'uploads',
              columns: [{ hidden: 'Preview' }, 'File', 'Door', 'Size', 'Type', 'Status', 'Processing', 'Created'],
              rows: p.items.map(
                (u) =>
                  html`<tr>
                    <td class="thumb">
                      ${
                        u.contentType.startsWith('image/') && u.status !== 'deleted'
                          ? html`<img src="/console/uploads/${u.uploadId}/thumbnail" alt="" width="48" height="48" loading="lazy" />`
                          : html`<span class="type-icon" aria-hidden="true">${u.contentType.split('/')[0]}</span>`
                      }
                    </td>
                    <td>
                      <a href="/console/uploads/${u.uploadId}">${u.fileName ?? u.uploadId}</a>
                      <div class="muted key">${u.idempotencyKey}</div>
                    </td>
                    <td>${u.arrival ?? html`<span class="muted">—</span>`}</td>
                    <td>${bytes(u.bytes)}</td>
                    <td>${u.contentType}</td>
                    <td>${badge(u.status)}</td>
                    <td>${badge(u.processing.status ?? 'pending')}</td>
                    <td>${when(u.createdAt)}</td>
                  </tr>`,
              ),
            })
      }
      ${p.nextCursor ? html`<p><a rel="next" href="/console/uploads${query({ ...f, cursor: p.nextCursor })}">Older uploads →</a></p>` : ''}`,
  );
}

/** Uploads per hour over the last day, oldest first, as an inline SVG (no script). */
export function sparkline(hourly: number[]): Fragment {
  const max = Math.max(1, ...hourly);
  const w = 240;
  const h = 36;
  const step = hourly.length > 1 ? w / (hourly.length - 1) : w;
  const points = hourly.map((n, i) => `${(i * step).toFixed(1)},${(h - 2 - (n / max) * (h - 4)).toFixed(1)}`).join(' ');
  const total = hourly.reduce((a, b) => a + b, 0);
  return html`<figure class="spark">
    <svg
      viewBox="0 0 ${w} ${h}"
      width="${w}"
      height="${h}"
      role="img"
      aria-label="${total} uploads in the last 24 hours, at most ${max} in one hour"
    >
      <polyline points="${points}" />
    </svg>
    <figcaption>${total} uploads in the last 24 hours</figcaption>
  </figure>`;
}
