// Processing: pipelines and image presets with their versions; re-processing jobs and import
// batches with their progress and their controls.
import { html } from 'hono/html';
import type { ConsoleCaller } from '../sessions';
import { actionButton, badge, may, page, progress, table, when, type Fragment } from './kit';

export interface Pipeline {
  name: string;
  version: number;
  steps: { type: string }[];
  builtin: boolean;
  createdAt: string | null;
}
export interface Preset {
  name: string;
  version: number;
  spec: string;
  createdAt: string;
}
export interface ReprocessJob {
  id: string;
  pipeline: string;
  version: number;
  state: string;
  total: number;
  done: number;
  skipped: number;
  failed: number;
  createdAt: string;
}
export interface ImportBatch {
  id: string;
  state: string;
  total: number;
  done: number;
  failed: number;
  skipped: number;
  pending: number;
  createdAt: string;
}

const OPEN = new Set(['listing', 'running', 'paused']);

export function processingPage(
  caller: ConsoleCaller,
  p: { pipelines: Pipeline[]; presets: Preset[]; jobs: ReprocessJob[]; batches: ImportBatch[]; notice?: string; error?: string },
): Fragment {
  const live = p.jobs.some((j) => j.state === 'running') || p.batches.some((b) => OPEN.has(b.state));
  return page(
    {
      title: 'Processing',
      caller,
      current: '/console/processing',
      notice: p.notice,
      error: p.error,
      live: live ? '/console/processing/live' : undefined,
    },
    html`<section aria-labelledby="pipelines-h">
        <h2 id="pipelines-h">Pipelines</h2>
        ${
          p.pipelines.length === 0
            ? html`<p class="empty">Only the built-in default.</p>`
            : table({
                caption: 'Pipelines, latest version of each',
                columns: ['Name', 'Version', 'Steps', 'Declared'],
                rows: p.pipelines.map(
                  (x) =>
                    html`<tr>
                      <td>${x.name}</td>
                      <td>v${x.version}</td>
                      <td>${x.steps.map((s) => s.type).join(' → ')}</td>
                      <td>${when(x.createdAt)}</td>
                    </tr>`,
                ),
              })
        }
      </section>
      <section aria-labelledby="presets-h">
        <h2 id="presets-h">Image presets</h2>
        ${
          p.presets.length === 0
            ? html`<p class="empty">None declared.</p>`
            : html`<ul>
                ${p.presets.map((x) => html`<li><strong>${x.name}</strong> v${x.version} <code>${x.spec}</code></li>`)}
              </ul>`
        }
      </section>
      <section aria-labelledby="jobs-h">
        <h2 id="jobs-h">Re-processing jobs</h2>
        ${
          p.jobs.length === 0
            ? html`<p class="empty">None.</p>`
            : html`<ul class="jobs">
                ${p.jobs.map(
                  (j) =>
                    html`<li>
                      ${badge(j.state)} ${j.pipeline} v${j.version} ${when(j.createdAt)}
                      ${progress(j.done + j.skipped + j.failed, j.total, `Job ${j.id.slice(0, 8)} progress`)}
                      ${j.failed ? html`<span class="muted">${j.failed} failed</span>` : ''}
                      ${
                        j.state === 'running' && may(caller, 'pipelines:manage')
                          ? actionButton(caller, { action: `/console/reprocess-jobs/${j.id}/cancel`, label: 'Cancel', danger: true })
                          : ''
                      }
                    </li>`,
                )}
              </ul>`
        }
      </section>
      <section aria-labelledby="batches-h">
        <h2 id="batches-h">Import batches</h2>
        ${
          p.batches.length === 0
            ? html`<p class="empty">None.</p>`
            : html`<ul class="jobs">
                ${p.batches.map(
                  (b) =>
                    html`<li>
                      ${badge(b.state)} <code>${b.id.slice(0, 8)}</code> ${when(b.createdAt)}
                      ${progress(b.done + b.skipped + b.failed, b.total, `Batch ${b.id.slice(0, 8)} progress`)}
                      ${b.failed ? html`<span class="muted">${b.failed} failed</span>` : ''}
                      ${
                        may(caller, 'imports:create') && b.state === 'running'
                          ? actionButton(caller, { action: `/console/import-batches/${b.id}/pause`, label: 'Pause' })
                          : ''
                      }
                      ${
                        may(caller, 'imports:create') && b.state === 'paused'
                          ? actionButton(caller, { action: `/console/import-batches/${b.id}/resume`, label: 'Resume' })
                          : ''
                      }
                      ${
                        may(caller, 'imports:create') && OPEN.has(b.state)
                          ? actionButton(caller, { action: `/console/import-batches/${b.id}/cancel`, label: 'Cancel', danger: true })
                          : ''
                      }
                    </li>`,
                )}
              </ul>`
        }
      </section>`,
  );
}
