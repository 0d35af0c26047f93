// Locates the pinned Go tools (built by scripts/tools.sh into the user cache), building
// them on first use. Nothing here downloads a prebuilt binary.
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { toolsScript } from '../paths';

export type Tool = 'temporal-dev' | 'versitygw' | 'toxiproxy' | 'temporal-server' | 'temporal-sql-tool' | 'jaeger';
const binaryName: Record<Tool, string> = {
  'temporal-dev': 'temporal-dev',
  versitygw: 'versitygw',
  toxiproxy: 'server',
  'temporal-server': 'temporal-server',
  'temporal-sql-tool': 'temporal-sql-tool',
  jaeger: 'jaeger',
};

export function toolsDir(): string {
  return process.env.ONCELY_TOOLS_DIR ?? path.join(process.env.XDG_CACHE_HOME ?? path.join(os.homedir(), '.cache'), 'oncely', 'bin');
}

export function toolPath(tool: Tool): string {
  const bin = path.join(toolsDir(), binaryName[tool]);
  if (!existsSync(bin)) {
    execFileSync('sh', [toolsScript, tool], { stdio: ['ignore', 'inherit', 'inherit'] });
  }
  return bin;
}
