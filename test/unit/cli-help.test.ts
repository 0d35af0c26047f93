// `oncely upload --help` names where the API key comes from, never the key itself.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const run = promisify(execFile);
const SECRET = 'onc_do_not_print_this_0123456789';

describe('oncely CLI help', () => {
  it.each([[['upload', '--help']], [['--help']]])(
    '`oncely %j` shows ONCELY_TOKEN as a source, not its value',
    async (args) => {
      const { stdout, stderr } = await run(process.execPath, ['--import', 'tsx', 'src/cli.ts', ...args], {
        env: { ...process.env, ONCELY_TOKEN: SECRET, ONCELY_URL: 'http://127.0.0.1:3999' },
      });
      expect(stdout + stderr).not.toContain(SECRET);
      if (args[0] === 'upload') expect(stdout).toMatch(/--token <key>\s+API key or upload token \(oup_…\) \(env: ONCELY_TOKEN\)/);
    },
    30_000,
  );

  it('the token from ONCELY_TOKEN is still used (a bad one is refused by the server, not missing)', async () => {
    const err = await run(
      process.execPath,
      [
        '--import',
        'tsx',
        'src/cli.ts',
        'upload',
        'package.json',
        '--outbox',
        `/tmp/oncely-outbox-${process.pid}.json`,
        '--max-attempts',
        '1',
      ],
      {
        env: { ...process.env, ONCELY_TOKEN: SECRET, ONCELY_URL: 'http://127.0.0.1:9' },
      },
    ).catch((e: { stderr: string; stdout: string }) => e);
    expect(String((err as { stderr: string }).stderr)).not.toMatch(/an API key or upload token is needed/);
    expect(String((err as { stderr: string }).stderr) + String((err as { stdout: string }).stdout)).not.toContain(SECRET);
  }, 30_000);
});
