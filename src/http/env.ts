// Typed context for every route and middleware (set once, used everywhere).
import type { HttpBindings } from '@hono/node-server';
import type { Logger } from 'pino';
import type { Credential, Principal } from '../credentials';
import type { Parent } from '../tokens/parent';

export interface AppEnv {
  Bindings: Partial<HttpBindings> & {
    /**
     * The credential of a request the console makes in-process for a signed-in session
     * (src/console/api.ts); only code in this process can set it, never a request from outside.
     */
    inProcessCredential?: Credential;
  };
  Variables: {
    tenantId: string;
    /** The credential of a /v1 request (set by bearerAuth). */
    principal: Principal;
    /** The credential that minted the derived credential of this request (set by actAsParent). */
    parent: Parent;
    log: Logger;
    /** X-Request-Id: the caller's, or one made for this request (set by requestTrace). */
    requestId: string;
    idempotencyKey: string;
    /** How the request ended, for the access log and metrics. */
    outcome: string;
    /** The workflow this request started or attached to (for the access log). */
    workflowId: string;
    /** The catalogue code of an error answer (for metrics). */
    errorCode: string;
    /** The CORS headers of a simple response (set by the cors middleware). */
    corsHeaders: Readonly<Record<string, string>>;
    /** The handler already put the CORS headers into its response. */
    corsApplied: boolean;
  };
}
