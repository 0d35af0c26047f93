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
