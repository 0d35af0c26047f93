// Starts Shopify's Toxiproxy (pinned, built from the Go module proxy) on loopback and
// returns its API client: proxies in front of real servers, with toxics switched on and off.
import path from 'node:path';
import { Toxiproxy } from 'toxiproxy-node-client';
import { toolPath } from '../../src/devstack/tools';
import { startProcess, waitUntil, type ManagedProcess } from '../../src/devstack/process';

export interface ToxiproxyServer {
  client: Toxiproxy;
  process: ManagedProcess;
  stop(): Promise<void>;
}

export async function startToxiproxy(opts: { port: number; dir: string }): Promise<ToxiproxyServer> {
  const proc = startProcess(toolPath('toxiproxy'), ['-host', '127.0.0.1', '-port', String(opts.port)], {
    logFile: path.join(opts.dir, 'toxiproxy.log'),
  });
  const client = new Toxiproxy(`http://127.0.0.1:${opts.port}`);
  await waitUntil('Toxiproxy', async () => Boolean(await client.getVersion()), { proc, timeoutMs: 30_000 });
  return { client, process: proc, stop: () => proc.stop() };
}
