// The determinism guard itself: workflow files importing Node built-ins or side-effecting
// modules fail lint, while the real workflow code passes.
import { ESLint } from 'eslint';
import { describe, expect, it } from 'vitest';

const eslint = new ESLint();

async function lint(code: string, file = 'workflows/probe.ts') {
  const [result] = await eslint.lintText(code, { filePath: file });
  return result!.messages.filter((m) => m.ruleId === 'no-restricted-imports');
}

describe('workflow import rule', () => {
  it.each([
    ["import { readFile } from 'node:fs/promises';"],
    ["import crypto from 'crypto';"],
    ["import pg from 'pg';"],
    ["import { S3Client } from '@aws-sdk/client-s3';"],
    ["import { createPool } from '../src/db/pool';"],
  ])('rejects %s', async (line) => {
    expect(await lint(`${line}\nexport const x = 1;\n`)).toHaveLength(1);
  });

  it('allows the workflow SDK and pure shared modules', async () => {
    const ok =
      "import { condition } from '@temporalio/workflow';\nimport { searchAttributes } from '../src/temporal/names';\nexport const x = [condition, searchAttributes];\n";
    expect(await lint(ok)).toHaveLength(0);
  });

  it('does not apply outside workflows/', async () => {
    expect(await lint("import { readFile } from 'node:fs/promises';\nexport const x = readFile;\n", 'src/probe.ts')).toHaveLength(0);
  });
});
