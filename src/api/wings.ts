// The one list of wings: each capability that lives in a folder of its own (docs/ARCHITECTURE.md
// "Wings") and what the app mounts of it. A new wing is one line here; the doors have their
// own list (src/arrivals/index.ts). Each wing takes what it needs from the same dependencies.
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { consoleWing } from '../console/wing';
import { downloadWing } from '../downloads/wing';
import { uncommittedOf, type App, type Wing } from '../http/wing';
import { imageWing } from '../images/wing';
import { importWing } from '../imports/wing';
import { quotaWing } from '../quotas/wing';
import { recordWing } from '../record/wing';
import { reprocessWing } from '../reprocess/wing';
import { storageTargetWing } from '../targets/wing';
import type { AllOf } from '../wings-vocabulary';

/** In mount order. */
const WINGS = [consoleWing, downloadWing, imageWing, recordWing, reprocessWing, storageTargetWing, quotaWing, importWing];

type Needs<W> = W extends (deps: infer D) => Wing ? D : never;
/** What the wings are built from: everything any wing asks for (the app passes its services and what they were wired from). */
export type WingDeps = AllOf<Needs<(typeof WINGS)[number]>>;

/** The wings, built once; mount each of their places where the app has it. */
export function buildWings(deps: WingDeps) {
  const wings: Wing[] = WINGS.map((wing) => wing(deps));
  const uncommitted = uncommittedOf(wings);
  return {
    mountPublic: (app: App) => wings.forEach((w) => w.mountPublic?.(app)),
    mount: (app: App) => wings.forEach((w) => w.mount?.(app)),
    mountOperator: (app: App) => wings.forEach((w) => w.mountOperator?.(app)),
    /** A WebSocket upgrade: true when a wing took the socket. */
    upgrade: (req: IncomingMessage, socket: Duplex, head: Buffer) => wings.some((w) => w.upgrade?.(req, socket, head) ?? false),
    close: () => wings.forEach((w) => w.close?.()),
    /** Uploads held before their commit (the import wing's), for GET and DELETE /v1/uploads/{id}. */
    uncommitted,
  };
}
