// Baselines for new uploads: the cost of Temporal itself on the same dev server. A plain
// start of a workflow that does nothing; and the floor an Oncely upload stands on, an
// Update-with-Start whose update is accepted and answered in the run's one workflow task.
import { condition, defineUpdate, setHandler } from '@temporalio/workflow';

export async function noopWorkflow(): Promise<string> {
  return 'ok';
}

export const noopOffer = defineUpdate<string, [string]>('noopOffer');

export async function noopUpdateWorkflow(): Promise<string> {
  let answer: string | undefined;
  setHandler(noopOffer, (offered) => (answer = offered));
  await condition(() => answer !== undefined);
  return answer!;
}
