// Calls `gone` once when a request body's client goes away before the body is complete:
// the request is aborted or fails, or its socket ends or closes mid-body. The server allows
// half-open connections, so a FIN alone closes nothing and a reader waiting for the rest
// would wait forever; every arrival mode that streams a body watches for this the same way.
import type { Readable } from 'node:stream';

/** Starts watching `body`; the returned function stops. */
export function onClientGone(body: Readable, gone: () => void): () => void {
  const socket = (body as { socket?: import('node:net').Socket }).socket;
  let called = false;
  const fire = () => {
    if (called || (body as { complete?: boolean }).complete === true) return;
    called = true;
    gone();
  };
  body.once('aborted', fire);
  body.once('error', fire);
  socket?.once('end', fire);
  socket?.once('close', fire);
  if (socket?.destroyed || socket?.readableEnded) fire();
  return () => {
    body.off('aborted', fire);
    body.off('error', fire);
    socket?.off('end', fire);
    socket?.off('close', fire);
  };
}
