// The one home of Temporal names holds true: every workflow type it names is a workflow the
// bundle exports, and every workflow the API or an activity starts by name is one of them.
import { describe, expect, it } from 'vitest';
import * as workflows from '../../workflows';
import { workflowIds, workflowTypes } from '../../src/temporal/names';

describe('src/temporal/names.ts', () => {
  it('names only workflows the bundle exports', () => {
    for (const type of Object.values(workflowTypes)) expect(typeof (workflows as Record<string, unknown>)[type], type).toBe('function');
  });

  it('keeps the ID formats running workflows were started under, one prefix each', () => {
    expect(workflowIds.downstream('u1')).toBe('downstream/u1');
    expect(workflowIds.deletion('u1')).toBe('delete/u1');
    expect(workflowIds.reprocessUpload('u1', 'photos', 3)).toBe('reprocess/u1/photos/v3');
    expect(new Set(Object.values(workflowIds).map((f) => (f as (...a: string[]) => string)('x', 'y', 'z').split('/')[0])).size).toBe(
      Object.keys(workflowIds).length,
    );
  });
});
