// A short chaos run inside the test command: the real runner (`chaos/run.ts`) as its own
// process, every fault kind injected at least once while 40 logical uploads (with concurrent
// copies, re-sends and one key reused for other bytes) go through Toxiproxy; it must end
// with zero duplicates, zero losses and every upload acknowledged.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFile } from 'node:child_process';
import { afterAll, expect, it } from 'vitest';
import { faultsByKind } from '../../chaos/faults';
import type { ChaosResult } from '../../chaos/report';
import { nodeTs } from '../../src/devstack/process';

const root = path.resolve(import.meta.dirname, '../..');
const dir = mkdtempSync(path.join(os.tmpdir(), 'oncely-chaos-test-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

it('survives every fault kind with no duplicate and no loss', { timeout: 420_000 }, async () => {
  const json = path.join(dir, 'result.json');
  const [cmd, args] = nodeTs(
    path.join(root, 'chaos/run.ts'),
    ...['--uploads', '40', '--duration', '30', '--seed', '11', '--concurrency', '8', '--settle', '180'],
    ...['--json', json],
  );
  const run = await new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
    execFile(cmd, args, { cwd: root, timeout: 400_000, maxBuffer: 16 * 1024 * 1024 }, (err, stdout, stderr) =>
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
  expect(run.code, `${run.stdout}\n${run.stderr.slice(-4000)}`).toBe(0);
  const result = JSON.parse(readFileSync(json, 'utf8')) as ChaosResult;
  for (const f of faultsByKind()) expect(result.faults[f.kind], f.kind).toBeGreaterThanOrEqual(1);
  expect(result.faultErrors).toBe(0);
  expect(result.attempted).toBe(40);
  expect(result.verdict.acknowledged).toBe(40);
  expect(result.verdict.unanswered).toBe(0);
  expect(result.verdict.duplicates).toEqual([]);
  expect(result.verdict.losses).toEqual([]);
  expect(result.verdict.other).toEqual([]);
  // Copies and re-sends were answered from the first execution, not by a second one.
  expect(result.verdict.replayedAnswers).toBeGreaterThan(0);
  expect(result.verdict.webhookDeliveries).toBeGreaterThanOrEqual(80);
  expect(run.stdout).toContain('duplicates found');
});
