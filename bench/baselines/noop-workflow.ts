// Baseline for new uploads: the cost of Temporal itself — start a workflow that does
// nothing and await its result, on the same dev server.
export async function noopWorkflow(): Promise<string> {
  return 'ok';
}
