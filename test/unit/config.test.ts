// Settings parsed once from the environment (src/config.ts): the worker's queues, the
// worker's tuning, secrets read from files.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect, it } from 'vitest';
import { loadConfig, SECRET_SETTINGS } from '../../src/config';

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

it('reads each secret setting from NAME_FILE (Docker and Kubernetes secrets), and refuses both at once or a file it cannot read', () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'oncely-config-'));
  try {
    const key = randomBytes(32).toString('base64');
    writeFileSync(path.join(dir, 'secrets-key'), `${key}\n`);
    writeFileSync(path.join(dir, 's3-secret'), 'wJalrXUtnFEMI/K7MDENG');
    writeFileSync(path.join(dir, 'admin'), 'admin-token-0123456789abcdef');
    const config = loadConfig({
      SECRETS_KEY_FILE: path.join(dir, 'secrets-key'),
      S3_SECRET_ACCESS_KEY_FILE: path.join(dir, 's3-secret'),
      ADMIN_TOKEN_FILE: path.join(dir, 'admin'),
    });
    expect([config.SECRETS_KEY, config.S3_SECRET_ACCESS_KEY, config.ADMIN_TOKEN]).toEqual([
      key,
      'wJalrXUtnFEMI/K7MDENG',
      'admin-token-0123456789abcdef',
    ]);
    // A file's content is checked as the setting itself would be.
    writeFileSync(path.join(dir, 'short'), 'short');
    expect(() => loadConfig({ ADMIN_TOKEN_FILE: path.join(dir, 'short') })).toThrow(/ADMIN_TOKEN: must be at least 24 characters/);
    expect(() => loadConfig({ SECRETS_KEY: key, SECRETS_KEY_FILE: path.join(dir, 'secrets-key') })).toThrow(
      /SECRETS_KEY_FILE: give SECRETS_KEY or SECRETS_KEY_FILE, not both/,
    );
    expect(() => loadConfig({ DATABASE_URL_FILE: path.join(dir, 'missing') })).toThrow(
      /DATABASE_URL_FILE: cannot read .*missing \(ENOENT\)/,
    );
    expect(SECRET_SETTINGS).toContain('S3_ACCESS_KEY_ID');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
