// Storage: the tenant's targets (where its uploads go) and its migrations between them, with
// their progress and their controls.
import { html } from 'hono/html';
import type { ConsoleCaller } from '../sessions';
import { actionButton, badge, may, page, progress, table, when, type Fragment } from './kit';

export interface Target {
  id: string;
  name: string;
  endpoint: string;
  bucket: string;
  prefix: string;
  residency: string | null;
  default: boolean;
  createdAt: string;
}
export interface Migration {
  id: string;
  from: string | null;
  to: string | null;
  state: string;
  total: number;
  moved: number;
  skipped: number;
  failed: number;
  bytesMoved: number;
  failures: { uploadId: string; reason: string | null }[];
  createdAt: string;
  finishedAt: string | null;
}

export const OPEN_MIGRATION = new Set(['running', 'paused']);

export function storagePage(
  caller: ConsoleCaller,
  p: {
    targets: Target[];
    defaultTarget: string | null;
    residency: string | null;
    migrations: Migration[];
    notice?: string;
    error?: string;
  },
): Fragment {
  const names = new Map(p.targets.map((t) => [t.id, t.name]));
  const store = (id: string | null) => (id === null ? 'the instance store' : (names.get(id) ?? id));
  const live = p.migrations.some((m) => OPEN_MIGRATION.has(m.state));
  return page(
    {
      title: 'Storage',
      caller,
      current: '/console/storage',
      notice: p.notice,
      error: p.error,
      live: live ? '/console/storage/live' : undefined,
    },
    html`<section aria-labelledby="targets-h">
        <h2 id="targets-h">Storage targets</h2>
        <p>
          Uploads that name no target go to <strong>${store(p.defaultTarget)}</strong>.${
            p.residency ? html` Every upload must be stored with residency <strong>${p.residency}</strong>.` : ''
          }
        </p>
        ${
          p.targets.length === 0
            ? html`<p class="empty">None: every upload is in the instance store.</p>`
            : table({
                caption: 'Storage targets',
                columns: ['Name', 'Bucket', 'Residency', 'Added'],
                rows: p.targets.map(
                  (t) =>
                    html`<tr>
                      <td>${t.name} ${t.default ? badge('default') : ''}</td>
                      <td><code>${t.endpoint}/${t.bucket}/${t.prefix}</code></td>
                      <td>${t.residency ?? html`<span class="muted">none</span>`}</td>
                      <td>${when(t.createdAt)}</td>
                    </tr>`,
                ),
              })
        }
      </section>
      <section aria-labelledby="migrations-h">
        <h2 id="migrations-h">Migrations</h2>
        ${
          p.migrations.length === 0
            ? html`<p class="empty">None.</p>`
            : html`<ul class="jobs">
                ${p.migrations.map(
                  (m) =>
                    html`<li>
                      ${badge(m.state)} ${store(m.from)} → ${store(m.to)} ${when(m.createdAt)}
                      ${progress(m.moved + m.skipped + m.failed, m.total, `Migration ${m.id.slice(0, 8)} progress`)}
                      <span class="muted">${m.moved} moved, ${m.skipped} skipped, ${m.failed} failed</span>
                      ${controls(caller, m)}
                      ${
                        m.failures.length
                          ? html`<ul class="failures">
                              ${m.failures.slice(0, 5).map((f) => html`<li><code>${f.uploadId.slice(0, 8)}</code> ${f.reason ?? ''}</li>`)}
                            </ul>`
                          : ''
                      }
                    </li>`,
                )}
              </ul>`
        }
      </section>`,
  );
}

function controls(caller: ConsoleCaller, m: Migration): Fragment {
  if (!may(caller, 'storage:manage') || !OPEN_MIGRATION.has(m.state)) return '';
  const at = `/console/storage-migrations/${m.id}`;
  return html`${m.state === 'running' ? actionButton(caller, { action: `${at}/pause`, label: 'Pause' }) : ''}
  ${m.state === 'paused' ? actionButton(caller, { action: `${at}/resume`, label: 'Resume' }) : ''}
  ${actionButton(caller, { action: `${at}/cancel`, label: 'Cancel', danger: true })}`;
}
