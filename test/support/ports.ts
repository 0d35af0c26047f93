// Ports for servers the tests start in other processes. A port from the kernel's ephemeral
// range (32768+ here) can be taken as the source port of an outgoing connection between the
// moment it is found free and the moment the child process listens on it (a start can take
// tens of seconds while the suite's other files connect everywhere), so these come from
// below it; a random start keeps the suite's parallel files apart.
import getPort, { portNumbers } from 'get-port';

const below = 32_767;
const lowest = 20_000;

/** A free 127.0.0.1 port outside the ephemeral range, none of `exclude`. */
export async function serverPort(exclude: readonly number[] = []): Promise<number> {
  const start = lowest + Math.floor(Math.random() * (below - lowest));
  const port = await getPort({ host: '127.0.0.1', port: [...portNumbers(start, below), ...portNumbers(lowest, start)], exclude });
  if (port > below) throw new Error(`no free port between ${lowest} and ${below}`);
  return port;
}
