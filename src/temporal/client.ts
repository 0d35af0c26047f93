// The Temporal client used by the API, and the classification of its errors.
import { Client, Connection } from '@temporalio/client';
import { status as grpcStatus } from '@grpc/grpc-js';

export interface TemporalHandle {
  client: Client;
  connection: Connection;
  close(): Promise<void>;
}

export async function connectTemporal(address: string, namespace: string): Promise<TemporalHandle> {
  // Lazy: the API starts (and answers 503) even while Temporal is still coming up.
  const connection = Connection.lazy({ address, connectTimeout: 5_000 });
  const client = new Client({ connection, namespace });
  return { client, connection, close: () => connection.close() };
}

/** gRPC status code carried by a Temporal client error, if any. */
export function grpcCode(err: unknown): number | undefined {
  let e: unknown = err;
  for (let i = 0; i < 5 && e; i++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'number') return code;
    e = (e as { cause?: unknown }).cause;
  }
  return undefined;
}

export function isResourceExhausted(err: unknown): boolean {
  return grpcCode(err) === grpcStatus.RESOURCE_EXHAUSTED;
}
