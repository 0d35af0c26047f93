// Starts Debian's clamd on loopback with a signature database the tests make themselves:
// the EICAR test file's MD5 in a .hdb (no signature download, no freshclam).
import { createHash } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { startProcess, waitUntil, type ManagedProcess } from '../../src/devstack/process';

/** The EICAR anti-virus test file, put together here so this source is not itself a match. */
export const EICAR = Buffer.from(['X5O!P%@AP[4\\PZX54(P^)7CC)7}', '$EICAR-STANDARD-ANTIVIRUS-', 'TEST-FILE!$H+H*'].join(''));
export const EICAR_SIGNATURE = 'Oncely.Test.EICAR';

export interface Clamd {
  address: string;
  /** clamd's StreamMaxLength. */
  maxBytes: number;
  process: ManagedProcess;
  stop(): Promise<void>;
}

export async function startClamd(opts: { port: number; dir: string; maxBytes?: number }): Promise<Clamd> {
  const dbDir = path.join(opts.dir, 'db');
  mkdirSync(dbDir, { recursive: true });
  writeFileSync(
    path.join(dbDir, 'oncely-test.hdb'),
    `${createHash('md5').update(EICAR).digest('hex')}:${EICAR.length}:${EICAR_SIGNATURE}\n`,
  );
  const maxBytes = opts.maxBytes ?? 1024 * 1024;
  const conf = path.join(opts.dir, 'clamd.conf');
  writeFileSync(
    conf,
    [
      'Foreground yes',
      `DatabaseDirectory ${dbDir}`,
      `TCPSocket ${opts.port}`,
      'TCPAddr 127.0.0.1',
      `StreamMaxLength ${maxBytes}`,
      'SelfCheck 0',
      `LogFile ${path.join(opts.dir, 'clamd-events.log')}`,
    ].join('\n'),
  );
  const proc = startProcess('clamd', ['-c', conf], { logFile: path.join(opts.dir, 'clamd.log') });
  await waitUntil('clamd', () => ping(opts.port), { proc, timeoutMs: 60_000 });
  return { address: `tcp://127.0.0.1:${opts.port}`, maxBytes, process: proc, stop: () => proc.stop() };
}

/** clamd's PING answers PONG once its signatures are loaded. */
function ping(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host: '127.0.0.1', port });
    let reply = '';
    socket.setTimeout(2000, () => socket.destroy());
    socket.on('connect', () => socket.write('zPING\0'));
    socket.on('data', (d) => (reply += d.toString()));
    socket.on('error', () => resolve(false));
    socket.on('close', () => resolve(reply.includes('PONG')));
  });
}
