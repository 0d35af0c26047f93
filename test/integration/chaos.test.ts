// Short chaos runs inside the test command: the real runner (`chaos/run.ts`) as its own
// process, every fault kind injected at least once while logical uploads (with concurrent
// copies, re-sends and keys reused for other bytes) go through Toxiproxy; each must end
// with zero duplicates, zero losses and every upload acknowledged. Once on the dev server
// (with a storage migration running through the faults), once on the real Temporal server
// with replicas.
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

async function chaosRun(name: string, extra: string[], uploads: number): Promise<{ result: ChaosResult; stdout: string }> {
  const json = path.join(dir, `${name}.json`);
  const [cmd, args] = nodeTs(path.join(root, 'chaos/run.ts'), ...extra, '--uploads', String(uploads), '--json', json);
  const run = await new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
    execFile(cmd, args, { cwd: root, timeout: 400_000, maxBuffer: 16 * 1024 * 1024 }, (err, stdout, stderr) =>
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
  expect(run.code, `${run.stdout}\n${run.stderr.slice(-4000)}`).toBe(0);
  return { result: JSON.parse(readFileSync(json, 'utf8')) as ChaosResult, stdout: run.stdout };
}

function expectClean(result: ChaosResult, uploads: number, kinds: string[]): void {
  for (const kind of kinds) expect(result.faults[kind], kind).toBeGreaterThanOrEqual(1);
  expect(result.faultErrors).toBe(0);
  expect(result.attempted).toBe(uploads);
  // Imports (Oncely reading the file from an origin) ran through the faults too.
  expect(result.imports).toBeGreaterThan(0);
  expect(result.verdict.acknowledged).toBe(uploads);
  expect(result.verdict.unanswered).toBe(0);
  expect(result.verdict.duplicates).toEqual([]);
  expect(result.verdict.losses).toEqual([]);
  expect(result.verdict.other).toEqual([]);
  // Copies and re-sends were answered from the first execution, not by a second one.
  expect(result.verdict.replayedAnswers).toBeGreaterThan(0);
  // Deletions and redeliveries ran through the faults too (erasure and event ids checked above).
  expect(result.verdict.deleted).toBeGreaterThan(0);
  expect(result.verdict.redelivered).toBeGreaterThan(0);
  // The erased uploads' runs were read raw from Temporal: sealed, none of their payloads opens.
  expect(result.verdict.erasedRunsChecked).toBeGreaterThanOrEqual(result.verdict.deleted);
}

it('survives every fault kind with no duplicate and no loss', { timeout: 420_000 }, async () => {
  const { result, stdout } = await chaosRun(
    'dev',
    ['--duration', '30', '--seed', '11', '--concurrency', '8', '--settle', '180', '--migrate'],
    40,
  );
  expectClean(
    result,
    40,
    faultsByKind().map((f) => f.kind),
  );
  expect(result.verdict.webhookDeliveries).toBeGreaterThanOrEqual(80);
  expect(stdout).toContain('duplicates found');
  // A storage migration ran through the faults too: every upload it took moved once (the audit checked each row's object in its target).
  expect(result.migration?.state).toBe('completed');
  expect(result.migration?.moved).toBeGreaterThan(0);
  expect(result.migration?.failed).toBe(0);
});

it(
  'on the real Temporal server with two API replicas, two upload workers and a transcode worker, every fault kind (the Temporal ↔ PostgreSQL cut too) leaves no duplicate and no loss',
  { timeout: 420_000 },
  async () => {
    const { result } = await chaosRun(
      'server',
      ['--duration', '80', '--seed', '12', '--concurrency', '8', '--settle', '180', '--temporal', 'server', '--replicas', '2'],
      30,
    );
    expectClean(
      result,
      30,
      faultsByKind(undefined, { temporalServer: true }).map((f) => f.kind),
    );
    expect(result.command).toContain('--temporal server --replicas 2');
  },
);
