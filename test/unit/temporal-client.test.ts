// A shutdown while Temporal is unreachable: the SDK's retry interceptor has a re-send queued
// on a timer when the connection closes. That late attempt must end the call as CANCELLED,
// not throw "Channel has been shut down" from the timer (an uncaught exception).
import net from 'node:net';
import { status } from '@grpc/grpc-js';
import { expect, it } from 'vitest';
import { connectTemporal, grpcCode } from '../../src/temporal/client';
import { eventually } from '../helpers/inspect';

it('ends a call whose retry is pending when the connection closes, without an uncaught error', async () => {
  // A server that accepts and drops every connection: each attempt fails UNAVAILABLE, so the
  // retry interceptor keeps a re-send scheduled.
  let connections = 0;
  const server = net.createServer((socket) => {
    connections++;
    socket.destroy();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const uncaught: unknown[] = [];
  const onUncaught = (err: unknown) => uncaught.push(err);
  process.on('uncaughtException', onUncaught);
  try {
    const { port } = server.address() as net.AddressInfo;
    const temporal = await connectTemporal(`127.0.0.1:${port}`, 'default');
    const call = temporal.client.workflowService.getSystemInfo({}).then(
      () => 'answered',
      (err: unknown) => err,
    );
    await eventually(async () => connections > 0, 10_000);
    // The first attempt has failed; retries of a fast-failing call follow every few hundred ms.
    await new Promise((r) => setTimeout(r, 300));
    await temporal.close();

    const outcome = await Promise.race([call, new Promise((r) => setTimeout(() => r('never settled'), 10_000))]);
    expect(grpcCode(outcome)).toBe(status.CANCELLED);
    // Any re-send still queued would fire within the SDK's backoff; give it time to.
    await new Promise((r) => setTimeout(r, 1_500));
    expect(uncaught).toEqual([]);
  } finally {
    process.off('uncaughtException', onUncaught);
    server.close();
  }
}, 30_000);
