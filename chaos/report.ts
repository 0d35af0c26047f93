// The printed result of a chaos run: faults injected, uploads, and what the audit found.
import Table from 'cli-table3';
import { FAULTS } from './faults';
import type { Verdict } from './verify';

export interface ChaosResult {
  command: string;
  seed: number;
  finishedAt: string;
  loadSeconds: number;
  planned: number;
  /** Of the planned uploads, how many were imports (Oncely read them from the run's origin). */
  imports: number;
  attempted: number;
  faultRounds: number;
  faults: Record<string, number>;
  faultErrors: number;
  restarts: { api: number; worker: number };
  /** With --migrate: the storage migration run through the faults. */
  migration?: { state: string; total: number; moved: number; skipped: number; failed: number };
  verdict: Verdict;
}

export function renderTable(r: ChaosResult): string {
  const faults = new Table({
    head: ['fault', 'injected', 'what'],
    style: { head: [], border: [] },
    colWidths: [24, 10, 70],
    wordWrap: true,
  });
  for (const f of FAULTS) if (f.kind in r.faults) faults.push([f.kind, r.faults[f.kind], f.what]);
  const v = r.verdict;
  const outcome = new Table({ head: ['measure', 'value'], style: { head: [], border: [] } });
  outcome.push(
    ['uploads planned / attempted', `${r.planned} / ${r.attempted}`],
    ['of them imports', String(r.imports)],
    ['uploads acknowledged (201)', v.acknowledged],
    ['uploads never answered', v.unanswered],
    ['answers received (all copies and re-sends)', v.answers],
    ['of which replays', v.replayedAnswers],
    ['key reused with other bytes → 422', v.misuseRefused],
    ['uploads deleted (erased once) / events redelivered', `${v.deleted} / ${v.redelivered}`],
    ['runs of erased uploads read raw: sealed, none opens', v.erasedRunsChecked],
    ['webhook deliveries received', v.webhookDeliveries],
    ['API / worker restarts after kills', `${r.restarts.api} / ${r.restarts.worker}`],
    ['staging objects swept at the end', v.stagingRemoved],
    ...(r.migration
      ? [
          [
            'storage migration: moved / skipped / failed of total',
            `${r.migration.moved} / ${r.migration.skipped} / ${r.migration.failed} of ${r.migration.total}`,
          ],
        ]
      : []),
    ['fault rounds (every kind once per round)', r.faultRounds],
    ['faults that failed to inject', r.faultErrors],
    ['duplicates found', v.duplicates.length],
    ['losses found', v.losses.length],
    ['other violations', v.other.length],
  );
  return [`$ ${r.command}   (load ${r.loadSeconds.toFixed(0)} s)`, faults.toString(), outcome.toString()].join('\n');
}
