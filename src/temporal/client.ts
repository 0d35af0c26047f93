// The Temporal client used by the API, and the classification of its errors.
import { Client, Connection, defaultGrpcRetryOptions, makeGrpcRetryInterceptor } from '@temporalio/client';
import type { PayloadCodec } from '@temporalio/common';
import { InterceptingCall, Metadata, status as grpcStatus, type Interceptor } from '@grpc/grpc-js';
import { tracingClientInterceptors } from '../telemetry/temporal';

/** grpc-js does not export this interface by name. */
type NextCallInterface = ConstructorParameters<typeof InterceptingCall>[0];

export interface TemporalHandle {
  client: Client;
  connection: Connection;
  close(): Promise<void>;
}

/** `codec`: the payload codec (PAYLOAD_ENCRYPTION), shared with the process's workers. */
export async function connectTemporal(address: string, namespace: string, codec?: PayloadCodec): Promise<TemporalHandle> {
  let closed = false;
  // Lazy: the API starts (and answers 503) even while Temporal is still coming up.
  const connection = Connection.lazy({
    address,
    connectTimeout: 5_000,
    interceptors: [makeGrpcRetryInterceptor(defaultGrpcRetryOptions()), closedConnectionGuard(() => closed)],
  });
  const client = new Client({
    connection,
    namespace,
    interceptors: tracingClientInterceptors(),
    ...(codec ? { dataConverter: { payloadCodecs: [codec] } } : {}),
  });
  return {
    client,
    connection,
    close: async () => {
      closed = true;
      await connection.close();
    },
  };
}

/**
 * The SDK's retry interceptor re-sends a failed call from a timer. If the connection is
 * closed before that timer fires (a shutdown while Temporal is unreachable), grpc-js throws
 * "Channel has been shut down" from the timer: an uncaught exception. Placed below the retry
 * interceptor, this guard ends such a late attempt as CANCELLED, which the retry interceptor
 * passes to the caller as an ordinary rejected call.
 */
export function closedConnectionGuard(isClosed: () => boolean): Interceptor {
  return (options, nextCall) => new InterceptingCall(isClosed() ? cancelledCall() : nextCall(options));
}

function cancelledCall(): NextCallInterface {
  return {
    start(_metadata, listener) {
      queueMicrotask(() =>
        listener?.onReceiveStatus?.({ code: grpcStatus.CANCELLED, details: 'Temporal connection closed', metadata: new Metadata() }),
      );
    },
    cancelWithStatus() {},
    getPeer: () => 'closed',
    sendMessageWithContext() {},
    sendMessage() {},
    startRead() {},
    halfClose() {},
    getAuthContext: () => null,
  };
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
