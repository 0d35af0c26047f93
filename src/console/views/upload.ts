// One upload's page: its record, the key it was made under, its pipeline's steps, its
// renditions, the events it caused with every delivery attempt, its deletion, and its run.
import { randomUUID } from 'node:crypto';
import { html } from 'hono/html';
import type { ConsoleCaller } from '../sessions';
import { actionButton, badge, bytes, facts, may, page, table, when, type Fragment } from './kit';
import type { UploadSummary } from './uploads';

export interface UploadDetail extends Omit<UploadSummary, 'processing'> {
  sha256: string;
  storageKey: string;
  createdAt: string;
  deletedAt: string | null;
  erasedAt: string | null;
  expiresAt: string | null;
  tokenId: string | null;
  subject: string | null;
  metadata: Record<string, unknown> | null;
  tags?: string[];
  version?: number;
  legalHold?: { reason: string; placedAt: string | null; placedBy: string | null } | null;
  restorableUntil?: string | null;
  availability?: string;
  rejectionReason?: string | null;
  processing: { status: string | null; reason: string | null; processedAt: string | null; media?: unknown };
  pipeline: {
    name: string;
    version: number;
    steps: { index: number; type: string; status: string; reason: string | null; finishedAt: string }[];
  };
  renditions: { name: string; contentType?: string; bytes?: number; files?: unknown[] }[];
}

export interface EventAttempt {
  endpointId: string;
  trigger: string;
  attemptedAt: string;
  durationMs: number | null;
  status: number | null;
  error: string | null;
  delivered: boolean;
}

/** The requests that came with the upload's key (GET /v1/idempotency-keys/{key}/requests). */
export interface KeyRequestsSeen {
  total: number;
  items: { n: number; at: string; requestId: string; method: string; route: string; status: number; outcome: string }[];
}

export interface EventDetail {
  id: string;
  type: string;
  uploadId: string | null;
  createdAt: string;
  payload?: { data?: Record<string, unknown> };
  deliveries: { endpointId: string; attempts: number; lastStatus: number | null; lastError: string | null; deliveredAt: string | null }[];
  attempts: EventAttempt[];
}

/** Each door as the page names it (src/modes.ts). */
const DOORS: Record<string, string> = {
  upload: 'one request (POST /v1/uploads)',
  form: 'a form post',
  tus: 'tus (resumable)',
  rufh: 'the IETF resumable draft',
  direct: 'a direct upload to the store',
  uppy: 'Uppy straight to the store',
  import: 'an import from a URL',
};

/** A version of the upload's record (GET /v1/uploads/{id}/versions). */
export interface RecordVersion {
  version: number;
  metadata: Record<string, unknown> | null;
  tags: string[];
  changedBy: string;
  changedAt: string;
}

/** An image variant stored for the upload (GET /v1/uploads/{id}/images). */
export interface StoredVariant {
  spec: string;
  contentType: string;
  bytes: number;
  width: number;
  height: number;
}

export function uploadPage(
  caller: ConsoleCaller,
  p: {
    upload: UploadDetail;
    events: EventDetail[];
    versions?: RecordVersion[];
    variants?: StoredVariant[];
    requests?: KeyRequestsSeen;
    runUrl?: string;
    notice?: string;
    error?: string;
  },
): Fragment {
  const u = p.upload;
  const pending = u.status === 'deleted_pending';
  const present = u.status !== 'deleted' && !pending;
  const live = (present && u.processing.status === 'pending') || (!present && !pending && !u.erasedAt);
  const canDelete = may(caller, 'uploads:delete') && present;
  const canReprocess = may(caller, 'pipelines:manage') && present && u.pipeline.version > 0;
  const image = u.contentType.startsWith('image/') && present;
  return page(
    {
      title: u.fileName ?? u.uploadId,
      caller,
      current: '/console/uploads',
      notice: p.notice,
      error: p.error,
      live: live ? `/console/uploads/${u.uploadId}/live` : undefined,
    },
    html`<div class="upload-head">
        ${image ? html`<img class="preview" src="/console/uploads/${u.uploadId}/thumbnail" alt="Preview of ${u.fileName ?? 'the upload'}" />` : ''}
        ${facts([
          ['Status', badge(u.status)],
          ['Processing', html`${badge(u.processing.status ?? 'pending')} ${u.processing.reason ?? ''}`],
          ['Upload ID', html`<code>${u.uploadId}</code>`],
          ['Idempotency-Key', html`<code>${u.idempotencyKey}</code>`],
          ['Came through', u.arrival ? (DOORS[u.arrival] ?? u.arrival) : null],
          ['Size', `${bytes(u.bytes)} (${u.bytes.toLocaleString('en')} bytes)`],
          ['Type', u.contentType],
          ['SHA-256', html`<code class="hash">${u.sha256}</code>`],
          ['Created', when(u.createdAt)],
          ['Processed', u.processing.processedAt ? when(u.processing.processedAt) : null],
          ['Expires', u.expiresAt ? when(u.expiresAt) : null],
          ['Deleted', u.deletedAt ? when(u.deletedAt) : null],
          ['Restorable until', pending && u.restorableUntil ? when(u.restorableUntil) : null],
          ['Erased', u.erasedAt ? when(u.erasedAt) : null],
          ['Made with', u.tokenId ? html`upload token <code>${u.tokenId}</code>${u.subject ? ` for ${u.subject}` : ''}` : 'an API key'],
          ['Metadata', u.metadata ? html`<pre>${JSON.stringify(u.metadata, null, 2)}</pre>` : null],
          ['Tags', u.tags?.length ? html`${u.tags.map((t) => html`<span class="badge">${t}</span> `)}` : null],
          ['Record version', u.version && u.version > 1 ? String(u.version) : null],
          [
            'Legal hold',
            u.legalHold
              ? html`${badge('held')} ${u.legalHold.reason}${u.legalHold.placedAt ? html` (since ${when(u.legalHold.placedAt)})` : ''}`
              : null,
          ],
          ['Rejected because', u.rejectionReason],
          ['Run', p.runUrl ? html`<a href="${p.runUrl}">Open the run in the Temporal UI</a>` : null],
        ])}
      </div>
      <div class="actions">
        ${present && may(caller, 'uploads:read') ? html`<a class="button" href="/console/uploads/${u.uploadId}/content">Download</a>` : ''}
        ${canReprocess ? actionButton(caller, { action: `/console/uploads/${u.uploadId}/reprocess`, label: 'Reprocess' }) : ''}
        ${canDelete && !u.legalHold ? actionButton(caller, { action: `/console/uploads/${u.uploadId}/delete`, label: 'Delete', danger: true }) : ''}
        ${may(caller, 'uploads:hold') && (present || pending) ? holdControl(caller, u) : ''}
        ${pending && may(caller, 'uploads:delete') ? actionButton(caller, { action: `/console/uploads/${u.uploadId}/restore`, label: 'Restore' }) : ''}
      </div>
      <section aria-labelledby="steps-h">
        <h2 id="steps-h">Pipeline ${u.pipeline.name} v${u.pipeline.version}</h2>
        ${
          u.pipeline.steps.length === 0
            ? html`<p class="empty">No step has finished yet.</p>`
            : html`<ol class="timeline">
                ${u.pipeline.steps.map(
                  (s) =>
                    html`<li class="step step-${s.status.replace(/[^a-z_]/g, '')}">
                      <span class="step-name">${s.index + 1}. ${s.type}</span> ${badge(s.status)} ${when(s.finishedAt)}
                      ${s.reason ? html`<div class="muted">${s.reason}</div>` : ''}
                    </li>`,
                )}
              </ol>`
        }
      </section>
      <section aria-labelledby="renditions-h">
        <h2 id="renditions-h">Renditions</h2>
        ${
          u.renditions.length === 0
            ? html`<p class="empty">None.</p>`
            : html`<ul class="renditions">
                ${u.renditions.map(
                  (r) =>
                    html`<li>
                      ${
                        r.contentType?.startsWith('image/') && present
                          ? html`<img src="/console/uploads/${u.uploadId}/renditions/${r.name}" alt="${r.name} rendition" loading="lazy" />`
                          : ''
                      }
                      <span>${r.name}</span> ${r.contentType ? html`<span class="muted">${r.contentType}</span>` : ''}
                      ${r.bytes !== undefined ? html`<span class="muted">${bytes(r.bytes)}</span>` : ''}
                    </li>`,
                )}
              </ul>`
        }
      </section>
      ${p.requests ? requestsSection(p.requests) : ''} ${p.variants?.length && image ? variantsSection(u.uploadId, p.variants) : ''}
      ${p.versions && p.versions.length > 1 ? versionsSection(p.versions) : ''}
      <section aria-labelledby="events-h">
        <h2 id="events-h">Events and deliveries</h2>
        ${p.events.length === 0 ? html`<p class="empty">No events yet.</p>` : p.events.map((e) => eventBlock(caller, e))}
      </section>`,
  );
}

/** Release the hold, or place one with its reason. */
function holdControl(caller: ConsoleCaller, u: UploadDetail): Fragment {
  if (u.legalHold) return actionButton(caller, { action: `/console/uploads/${u.uploadId}/release`, label: 'Release the legal hold' });
  return html`<form method="post" action="/console/uploads/${u.uploadId}/hold" class="action">
    <input type="hidden" name="csrf" value="${caller.session.csrf_token}" />
    <input type="hidden" name="once" value="${randomUUID()}" />
    <label>Hold reason <input name="reason" required maxlength="500" /></label>
    <button type="submit">Place a legal hold</button>
  </form>`;
}

/** Every request that came with its key: the first answer, the replays, the ones that attached to its run. */
function requestsSection(r: KeyRequestsSeen): Fragment {
  return html`<section aria-labelledby="requests-h">
    <h2 id="requests-h">Requests with its key</h2>
    ${table({
      caption:
        r.total > r.items.length ? `The first ${r.items.length} of ${r.total} requests` : `${r.total} request${r.total === 1 ? '' : 's'}`,
      showCaption: true,
      columns: ['#', 'When', 'Request', 'Answer'],
      rows: r.items.map(
        (q) =>
          html`<tr>
            <td>${q.n}</td>
            <td>${when(q.at)}</td>
            <td><code>${q.method} ${q.route}</code> <span class="muted">${q.requestId}</span></td>
            <td>${q.status} ${badge(q.outcome)}</td>
          </tr>`,
      ),
    })}
  </section>`;
}

/** The image variants made so far, each with its preview (fetched through a URL the API signs). */
function variantsSection(uploadId: string, variants: StoredVariant[]): Fragment {
  return html`<section aria-labelledby="variants-h">
    <h2 id="variants-h">Image variants</h2>
    <ul class="renditions">
      ${variants.map(
        (v) =>
          html`<li>
            <img src="/console/uploads/${uploadId}/images/${encodeURIComponent(v.spec)}" alt="${v.spec} variant" loading="lazy" />
            <code>${v.spec}</code> <span class="muted">${v.width}×${v.height} ${v.contentType} ${bytes(v.bytes)}</span>
          </li>`,
      )}
    </ul>
  </section>`;
}

/** The record's versions, newest first: who changed what, and when. */
function versionsSection(versions: RecordVersion[]): Fragment {
  return html`<section aria-labelledby="versions-h">
    <h2 id="versions-h">Versions of its metadata and tags</h2>
    <ol class="timeline" reversed>
      ${versions.map(
        (v) =>
          html`<li>
            <span class="step-name">v${v.version}</span> ${when(v.changedAt)}
            <span class="muted">${v.changedBy === 'upload' ? 'as uploaded' : `by ${v.changedBy}`}</span>
            ${v.tags.length ? html`<div>${v.tags.map((t) => html`<span class="badge">${t}</span> `)}</div>` : ''}
            ${v.metadata ? html`<pre>${JSON.stringify(v.metadata, null, 2)}</pre>` : ''}
          </li>`,
      )}
    </ol>
  </section>`;
}

/** An event with its deliveries as a timeline of attempts, and its redeliver button. */
export function eventBlock(caller: ConsoleCaller, e: EventDetail): Fragment {
  const failed = e.deliveries.some((d) => d.deliveredAt === null);
  return html`<article class="event${failed ? ' failed' : ''}" aria-labelledby="ev-${e.id}">
    <h3 id="ev-${e.id}"><a href="/console/events/${e.id}">${e.type}</a> ${when(e.createdAt)}</h3>
    ${
      e.deliveries.length === 0
        ? html`<p class="muted">No endpoint was subscribed.</p>`
        : html`<ul class="deliveries">
            ${e.deliveries.map(
              (d) =>
                html`<li>
                  <code>${d.endpointId.slice(0, 8)}</code> ${badge(d.deliveredAt ? 'delivered' : 'failing')} after ${d.attempts}
                  attempt${d.attempts === 1 ? '' : 's'}${d.lastStatus ? html`, last HTTP ${d.lastStatus}` : ''}${
                    d.lastError ? html`, <span class="muted">${d.lastError}</span>` : ''
                  }
                  <ol class="attempts" aria-label="Attempts">
                    ${e.attempts
                      .filter((a) => a.endpointId === d.endpointId)
                      .map(
                        (a) =>
                          html`<li class="${a.delivered ? 'ok' : 'bad'}">
                            ${when(a.attemptedAt)} ${a.trigger} →
                            ${a.status ?? a.error ?? 'no answer'}${a.durationMs !== null ? ` in ${a.durationMs} ms` : ''}
                          </li>`,
                      )}
                  </ol>
                </li>`,
            )}
          </ul>`
    }
    ${
      may(caller, 'webhooks:manage') && e.deliveries.length > 0
        ? actionButton(caller, { action: `/console/events/${e.id}/redeliver`, label: 'Redeliver' })
        : ''
    }
  </article>`;
}
