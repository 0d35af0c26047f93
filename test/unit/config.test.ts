// Settings parsed once from the environment (src/config.ts): the worker's queues.
import { expect, it } from 'vitest';
import { loadConfig } from '../../src/config';

it('WORKER_QUEUES selects the task queues a worker polls, both by default, and refuses others', () => {
  expect(loadConfig({}).WORKER_QUEUES).toEqual(['uploads', 'transcode']);
  expect(loadConfig({ WORKER_QUEUES: 'transcode' }).WORKER_QUEUES).toEqual(['transcode']);
  expect(loadConfig({ WORKER_QUEUES: ' uploads ' }).WORKER_QUEUES).toEqual(['uploads']);
  expect(() => loadConfig({ WORKER_QUEUES: 'uploads,thumbnails' })).toThrow(/WORKER_QUEUES/);
  expect(() => loadConfig({ WORKER_QUEUES: ',' })).toThrow(/WORKER_QUEUES/);
});

it('WORKER_TUNING takes a JSON object of known worker options and refuses anything else by name', () => {
  expect(loadConfig({}).WORKER_TUNING).toEqual({});
  expect(
    loadConfig({
      WORKER_TUNING:
        '{"maxConcurrentWorkflowTaskExecutions":10,"workflowTaskPollerBehavior":{"type":"autoscaling","maximum":20},"reuseV8Context":true}',
    }).WORKER_TUNING,
  ).toEqual({
    maxConcurrentWorkflowTaskExecutions: 10,
    workflowTaskPollerBehavior: { type: 'autoscaling', maximum: 20 },
    reuseV8Context: true,
  });
  expect(() => loadConfig({ WORKER_TUNING: 'maxConcurrent=10' })).toThrow(/WORKER_TUNING: must be a JSON object/);
  expect(() => loadConfig({ WORKER_TUNING: '{"debugMode":true}' })).toThrow(/WORKER_TUNING: .*debugMode/);
  expect(() => loadConfig({ WORKER_TUNING: '{"maxConcurrentWorkflowTaskExecutions":1}' })).toThrow(
    /WORKER_TUNING: maxConcurrentWorkflowTaskExecutions/,
  );
  expect(() => loadConfig({ WORKER_TUNING: '{"workflowTaskPollerBehavior":{"type":"fixed"}}' })).toThrow(
    /WORKER_TUNING: workflowTaskPollerBehavior/,
  );
});
