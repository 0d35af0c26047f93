// A Docker engine for the compose smoke: the one that answers, or one started here the way
// this machine kind allows (no bridge network, no iptables: host networking only), stopped
// again at the end. Also the pinned docker-compose the tools script builds.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { openSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
const toolsDir =
  process.env.ONCELY_TOOLS_DIR ?? path.join(process.env.XDG_CACHE_HOME ?? path.join(process.env.HOME ?? '/root', '.cache'), 'oncely/bin');
export const composeBinary = path.join(toolsDir, 'docker-compose');

export interface Engine {
  /** Stops the engine when this run started it. */
  stop(): Promise<void>;
}

const answers = () =>
  run('docker', ['info', '--format', '{{.ServerVersion}}'], { timeout: 10_000 }).then(
    () => true,
    () => false,
  );

export async function ensureEngine(logFile: string): Promise<Engine> {
  if (await answers()) return { stop: async () => {} };
  const out = openSync(logFile, 'a');
  const daemon: ChildProcess = spawn('dockerd', ['--bridge=none', '--iptables=false', '--ip6tables=false'], {
    stdio: ['ignore', out, out],
  });
  const deadline = Date.now() + 60_000;
  while (!(await answers())) {
    if (daemon.exitCode !== null || Date.now() > deadline) throw new Error(`dockerd did not come up (see ${logFile})`);
    await new Promise((r) => setTimeout(r, 500));
  }
  return {
    async stop() {
      if (daemon.exitCode !== null) return;
      const exited = new Promise((r) => daemon.once('exit', r));
      daemon.kill('SIGTERM');
      await Promise.race([exited, new Promise((r) => setTimeout(r, 30_000))]);
      if (daemon.exitCode === null) daemon.kill('SIGKILL');
    },
  };
}

/** Runs a command, failing with its output. */
export async function sh(
  cmd: string,
  args: string[],
  opts: { cwd?: string; env?: NodeJS.ProcessEnv; timeoutMs?: number } = {},
): Promise<string> {
  try {
    const { stdout } = await run(cmd, args, {
      cwd: opts.cwd,
      env: opts.env ?? process.env,
      timeout: opts.timeoutMs ?? 600_000,
      maxBuffer: 64 * 1024 * 1024,
    });
    return stdout;
  } catch (err) {
    const e = err as { stdout?: string; stderr?: string; message: string; code?: number | string };
    // The exit code stays on the error, for callers that expect a failure.
    throw Object.assign(new Error(`${cmd} ${args.join(' ')} failed: ${e.message}\n${e.stdout ?? ''}\n${e.stderr ?? ''}`), { code: e.code });
  }
}
