// The redelivery and recovery workflows at their own level: a redelivery sends one event to
// each named endpoint (one that gives up is recorded, not fatal); a recovery pages through an
// endpoint's undelivered events (continuing as new between full pages), counts what was
// delivered and what failed, and answers its progress to the query while it runs.
import { randomUUID } from 'node:crypto';
import { ApplicationFailure } from '@temporalio/common';
import { describe, expect, it } from 'vitest';
import { workflowIds } from '../../src/temporal/names';
import { recoveryProgressQuery, type RecoveryProgress } from '../../src/temporal/definitions';
import { recoveryWorkflow, redeliveryWorkflow } from '../../workflows/redelivery';
import { eventually } from '../helpers/inspect';
import { recorder, useWorkflowWorker } from '../helpers/workflow-worker';

const { called, record } = recorder();
/** The recovery's undelivered events: 130 (a full page of 100, then 30); every seventh fails. */
const EVENTS = Array.from({ length: 130 }, (_, i) => `evt_${String(i).padStart(4, '0')}`);
let releaseSecondPage: () => void = () => {};
const secondPage = new Promise<void>((r) => (releaseSecondPage = r));
const activities = {
  redeliverEvent: record('redeliverEvent', ({ eventId, endpointId }: { eventId: string; endpointId: string }) => {
    if (endpointId === 'ep-down') throw ApplicationFailure.create({ message: 'receiver down', nonRetryable: true });
    if (eventId === 'evt_gone') return 'event_gone';
    return Number(eventId.slice(4)) % 7 === 6 ? 'gave_up' : 'delivered';
  }),
  listUndelivered: record('listUndelivered', async ({ after, limit }: { after: { id: string } | null; limit: number }) => {
    const start = after ? EVENTS.indexOf(after.id) + 1 : 0;
    if (start > 0) await secondPage;
    return EVENTS.slice(start, start + limit).map((eventId, i) => ({
      eventId,
      position: { createdMicros: String(start + i), id: eventId },
    }));
  }),
};
const workflows = useWorkflowWorker('redelivery-workflow', activities);

describe('redeliveryWorkflow', () => {
  it('sends the event to each named endpoint once and records the one that gave up', async () => {
    const eventId = `evt_${randomUUID().slice(0, 8)}`;
    const result = await workflows.env.client.workflow.execute(redeliveryWorkflow, {
      taskQueue: workflows.taskQueue,
      workflowId: workflowIds.redelivery(eventId, randomUUID()),
      args: [{ tenantId: 't1', eventId, endpointIds: ['ep-1', 'ep-down'] }],
    });
    expect(result).toEqual({ 'ep-1': 'delivered', 'ep-down': 'gave_up' });
    expect(
      called('redeliverEvent')
        .filter((c) => c.args[0].eventId === eventId)
        .map((c) => c.args[0]),
    ).toEqual(
      expect.arrayContaining([
        { tenantId: 't1', eventId, endpointId: 'ep-1', trigger: 'manual' },
        { tenantId: 't1', eventId, endpointId: 'ep-down', trigger: 'manual' },
      ]),
    );
  });
});

describe('recoveryWorkflow', () => {
  it('pages through the window, continuing as new after a full page, and answers its progress while it runs', async () => {
    const handle = await workflows.env.client.workflow.start(recoveryWorkflow, {
      taskQueue: workflows.taskQueue,
      workflowId: workflowIds.recovery('ep-1', '2026-12-01T00:00:00Z', '2026-12-06T00:00:00Z'),
      args: [{ tenantId: 't1', endpointId: 'ep-1', since: '2026-12-01T00:00:00Z', until: '2026-12-06T00:00:00Z' }],
    });
    // The first page is done and the run has continued as new, waiting on the second page.
    const failedOfFirst = EVENTS.slice(0, 100).filter((e) => Number(e.slice(4)) % 7 === 6).length;
    let progress: RecoveryProgress | undefined;
    await eventually(async () => {
      progress = await handle.query(recoveryProgressQuery).catch(() => undefined);
      return progress?.found === 100 && progress.delivered + progress.failed === 100;
    }, 30_000);
    expect(progress).toEqual({ found: 100, delivered: 100 - failedOfFirst, failed: failedOfFirst, done: false });
    releaseSecondPage();
    const failed = EVENTS.filter((e) => Number(e.slice(4)) % 7 === 6).length;
    expect(await handle.result()).toEqual({ found: 130, delivered: 130 - failed, failed, done: true });
    expect(called('listUndelivered').map((c) => c.args[0].after?.id ?? null)).toEqual([null, 'evt_0099']);
    expect(
      new Set(
        called('redeliverEvent')
          .filter((c) => c.args[0].trigger === 'recover')
          .map((c) => c.args[0].eventId),
      ).size,
    ).toBe(130);
    // The first run ended by continuing as new: the second page ran in a run of its own.
    const first = await workflows.env.client.workflow.getHandle(handle.workflowId, handle.firstExecutionRunId).describe();
    expect(first.status.name).toBe('CONTINUED_AS_NEW');
  });
});
