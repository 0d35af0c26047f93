// Importer.cancel, the deletion of an upload still importing: what the run's cancelImport
// update answers is the outcome; a run that does not take it (ended, or started by a release
// without the handler) is "committing" (the DELETE answers 409 and works once it has
// committed); Temporal not answering is 503. A fake client stands in for Temporal; the real
// cancel, on both stores, is imports.test.ts.
import { WorkflowNotFoundError, WorkflowUpdateFailedError, type Client } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { expect, it } from 'vitest';
import { Problem } from '../../src/errors';
import { Importer, type ImporterDeps } from '../../src/imports/importer';
import type { ImportRow } from '../../src/db/queries/imports';
import { uploadWorkflowId } from '../../src/temporal/ids';

const row = { id: 'u1', tenant_id: 't1', idempotency_key: 'key-0123456789abcdef', state: 'importing' } as ImportRow;

function importerWith(update: () => Promise<unknown>) {
  const asked: string[] = [];
  const temporal = {
    workflow: {
      getHandle: (id: string) => ({
        executeUpdate: () => {
          asked.push(id);
          return update();
        },
      }),
    },
  } as unknown as Client;
  return { importer: new Importer({ temporal } as ImporterDeps), asked };
}

it.each(['canceling', 'committing'] as const)("answers the run's own outcome (%s), asking the key's run", async (outcome) => {
  const { importer, asked } = importerWith(async () => outcome);
  expect(await importer.cancel(row)).toBe(outcome);
  expect(asked).toEqual([uploadWorkflowId('t1', 'key-0123456789abcdef')]);
});

it.each([
  [
    'the run refused the update (no handler: an older release)',
    () => new WorkflowUpdateFailedError('unknown update', ApplicationFailure.create({ message: 'no handler' })),
  ],
  ['the run has ended', () => new WorkflowNotFoundError('workflow execution already completed', 'wf', undefined)],
])('%s: committing', async (_name, failure) => {
  const { importer } = importerWith(() => Promise.reject(failure()));
  expect(await importer.cancel(row)).toBe('committing');
});

it('Temporal not answering: 503 temporal_unavailable, the cause kept', async () => {
  const down = new Error('14 UNAVAILABLE: connection refused');
  const { importer } = importerWith(() => Promise.reject(down));
  const err = await importer.cancel(row).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(Problem);
  expect((err as Problem).code).toBe('temporal_unavailable');
  expect((err as Problem).cause).toBe(down);
});
