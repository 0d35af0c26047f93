// The task queues an operator watches: who polls each (the workers) and its backlog, from
// Temporal's DescribeTaskQueue (stats as the server reports them; best effort).
import type { Client } from '@temporalio/client';
import proto from '@temporalio/proto';

export interface QueueState {
  name: string;
  kind: 'workflow' | 'activity';
  pollers: { identity: string; lastAccess: string | null }[];
  backlog: number | null;
  error?: string;
}

const KINDS = [
  ['workflow', proto.temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW],
  ['activity', proto.temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY],
] as const;

export async function describeQueues(client: Client, namespace: string, names: string[]): Promise<QueueState[]> {
  return Promise.all(
    names.flatMap((name) =>
      KINDS.map(async ([kind, taskQueueType]): Promise<QueueState> => {
        try {
          const res = await client.workflowService.describeTaskQueue({ namespace, taskQueue: { name }, taskQueueType, reportStats: true });
          return {
            name,
            kind,
            pollers: (res.pollers ?? []).map((p) => ({
              identity: p.identity ?? '',
              lastAccess: p.lastAccessTime?.seconds ? new Date(Number(p.lastAccessTime.seconds) * 1000).toISOString() : null,
            })),
            backlog: res.stats?.approximateBacklogCount != null ? Number(res.stats.approximateBacklogCount) : null,
          };
        } catch (err) {
          return { name, kind, pollers: [], backlog: null, error: (err as Error).message };
        }
      }),
    ),
  );
}
