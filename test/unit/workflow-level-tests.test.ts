// Every workflow the bundle exports is started, on its own, by a test at the workflow's level
// (a file that drives the shared bundle through TestWorkflowEnvironment with recording
// activities): a new workflow arrives with its tests beside the whole-stack ones.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import * as workflows from '../../workflows';

const DIR = 'test/integration';

/** The workflows a file starts by reference: `.start(x`, `.execute(x`. */
function startedIn(text: string): string[] {
  return [...text.matchAll(/\.(?:start|execute)\(\s*(\w+Workflow)\b/g)].map((m) => m[1]!);
}

it('finds the workflows a test starts', () => {
  expect(startedIn('client.workflow.execute(fooWorkflow, {}); wf.start(\n  barWorkflow, {}); start(bazWorkflow)')).toEqual([
    'fooWorkflow',
    'barWorkflow',
  ]);
});

it('starts each workflow the bundle exports in a workflow-level test', () => {
  const started = new Set(
    readdirSync(DIR)
      .map((f) => readFileSync(join(DIR, f), 'utf8'))
      .filter((text) => /useWorkflowWorker|TestWorkflowEnvironment/.test(text))
      .flatMap(startedIn),
  );
  const exported = Object.keys(workflows);
  expect(exported.length).toBeGreaterThan(10);
  expect(exported.filter((w) => !started.has(w))).toEqual([]);
});
