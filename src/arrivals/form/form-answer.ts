// A form post's answer (POST /v1/uploads with multipart/form-data, and the form Uppy posts
// to its companion): the file part is the upload (./form-post.ts), under the
// tenant's in-flight limit (a refusal before the whole form is read closes the connection: src/api/problem-handler.ts).
import type { Context } from 'hono';
import type { ArrivalMode } from '../../modes';
import type { Config } from '../../config';
import { problem } from '../../errors';
import { receiveFormPost } from './form-post';
import type { Intake } from '../intake';
import type { UploadReceiver } from '../../upload/receive';
import { parsePrefer } from '../../http/parse/request-headers';
import type { AppEnv } from '../../http/env';
import { header, headerValues } from '../../http/headers';
import { renderOutcome } from '../../http/upload-answer';
import { callerOf, callingToken } from '../../http/scopes';

export async function answerFormPost(
  c: Context<AppEnv>,
  deps: { receiver: UploadReceiver; config: Config; intake: Intake },
  tenantId: string,
  mode: Extract<ArrivalMode, 'form' | 'uppy'> = 'form',
): Promise<Response> {
  const { receiver, config, intake } = deps;
  const grant = callingToken(c)?.grant;
  const { waitMs } = parsePrefer(header(c, 'prefer'), config.DEFAULT_WAIT_SECONDS, config.MAX_WAIT_SECONDS);
  const incoming = c.env?.incoming;
  if (!incoming) throw problem('media_type_unsupported', 'Form posts need the Node server.');
  const release = intake.slot(tenantId);
  let key = '';
  try {
    const outcome = await receiveFormPost(
      receiver,
      {
        tenantId,
        headers: incoming.headers,
        keyHeader: headerValues(c, 'idempotency-key'),
        body: incoming,
        waitMs,
        maxBytes: Math.min(intake.maxBytes, grant?.maxBytes ?? Infinity),
        grant,
        arrival: { mode, caller: callerOf(c) },
        declare: (declared) => intake.declare(c, mode, declared),
      },
      (k) => {
        key = k;
        c.set('idempotencyKey', k);
      },
    );
    return renderOutcome(c, outcome, key, false);
  } finally {
    release();
  }
}
