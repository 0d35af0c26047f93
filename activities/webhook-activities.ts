// Side effects of announcing an upload: which endpoints an event goes to, and sending one
// event to one endpoint with the ledger. Safe to run more than once: the event is recorded
// with the body it is sent with, every attempt carries the same webhook-id, and the
// automatic delivery stops once the ledger says delivered.
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { Webhook } from 'standardwebhooks';
import type { Pool } from '../src/db/pool';
import { claimDelivery, finishAttempt, recordEvent, releaseDelivery, type AttemptTrigger } from '../src/db/queries/events';
import { disableEndpoint, findEndpoint, listEndpoints } from '../src/db/queries/webhooks';
import { eventBody, sentAfterTombstone, type WebhookEvent } from '../src/downstream/events';
import { assertDeliverableUrl, DisallowedUrlError, type Resolver } from '../src/downstream/url-guard';
import { deliveryErrorMessage, retryAfterMs, WebhookHttp, type WebhookAnswer } from '../src/downstream/webhook-http';
import { metrics } from '../src/metrics';
import { webhookSecretContext, type SecretBox } from '../src/secret-box';
import { failureTypes } from '../src/temporal/names';

export interface WebhookActivityDeps {
  pool: Pool;
  /** `resolve` replaces the system resolver (tests). */
  webhook: { allowPrivateNetworks: boolean; timeoutMs: number; maxEndpoints: number; resolve?: Resolver };
  /** Opens endpoints' signing secrets, stored sealed. */
  secrets: SecretBox;
}

/** What one delivery activity ended with (a failure to send is a thrown, retried error). */
export type DeliveryOutcome = 'delivered' | 'already_delivered' | 'endpoint_gone' | 'endpoint_disabled' | 'upload_deleted' | 'in_flight';

export function createWebhookActivities({ pool, webhook, secrets }: WebhookActivityDeps) {
  const http = new WebhookHttp(webhook);
  const activities = {
    /**
     * Enabled endpoints at the time of the event (recorded in history, so replay-stable), at
     * most the tenant quota (oldest first): the child's history is bounded by the largest
     * fan-out even if the quota was lowered after endpoints were made.
     */
    async listWebhookEndpoints(tenantId: string): Promise<string[]> {
      return (await listEndpoints(pool, tenantId))
        .filter((e) => e.enabled)
        .slice(0, webhook.maxEndpoints)
        .map((e) => e.id);
    },

    /**
     * Sends one event to one endpoint. The event is recorded first with the body it is sent
     * with (a redelivery sends the same bytes and webhook-id); the delivery's lease keeps an
     * automatic retry and a manual redelivery from sending at the same time. `trigger`
     * absent: the automatic delivery, which stops once delivered; `manual` and `recover`
     * send again even if delivered.
     */
    async deliverWebhook({
      event,
      endpointId,
      timestamp,
      trigger = 'automatic',
    }: {
      event: WebhookEvent;
      endpointId: string;
      timestamp: string;
      trigger?: AttemptTrigger;
    }): Promise<DeliveryOutcome> {
      // After the tombstone only upload.deleted and changes recorded before it go out: no announcement of bytes that are gone.
      const payload = await recordEvent(
        pool,
        {
          id: event.id,
          tenant_id: event.tenantId,
          upload_id: event.uploadId,
          type: event.type,
          payload: eventBody(event, timestamp),
        },
        { afterTombstone: sentAfterTombstone(event.type) },
      );
      if (payload === undefined) return 'upload_deleted';
      const endpoint = await findEndpoint(pool, endpointId);
      if (!endpoint) return 'endpoint_gone';
      if (!endpoint.enabled) return 'endpoint_disabled';
      const { workflowExecution: run, activityId } = Context.current().info;
      const holder = `${run?.workflowId}/${run?.runId}/${activityId}`;
      const lease = await claimDelivery(pool, {
        eventId: event.id,
        endpointId,
        tenantId: event.tenantId,
        uploadId: event.uploadId,
        eventType: event.type,
        seconds: webhook.timeoutMs / 1000 + 30,
        holder,
      });
      if (!lease.claimed) {
        // Another attempt is sending right now: that copy is the one this one would add.
        if (trigger === 'automatic')
          throw ApplicationFailure.retryable(`delivery to endpoint ${endpointId} is in flight`, failureTypes.deliveryInFlight);
        return 'in_flight';
      }
      const startedAt = Date.now();
      // Recording an attempt gives the lease back too; otherwise the finally below does.
      let held = true;
      const attempted = async (status: number | null, error: string | null, delivered: boolean) => {
        const duration_ms = Date.now() - startedAt;
        await finishAttempt(pool, { event_id: event.id, endpoint_id: endpointId, trigger, duration_ms, status, error, delivered, holder });
        held = false;
      };
      try {
        if (lease.delivered && trigger === 'automatic') return 'already_delivered';
        const refuse = async (err: DisallowedUrlError) => {
          await attempted(null, err.message, false);
          await disableEndpoint(pool, endpointId, `target not allowed: ${err.message}`);
          metrics.webhookDeliveries.inc({ result: 'refused' });
          return 'endpoint_disabled' as const;
        };
        try {
          await assertDeliverableUrl(endpoint.url, webhook);
        } catch (err) {
          if (!(err instanceof DisallowedUrlError)) throw err;
          return await refuse(err);
        }
        const sentAt = new Date();
        const headers = {
          'content-type': 'application/json',
          'user-agent': 'Oncely-Webhooks/1',
          'webhook-id': event.id,
          'webhook-timestamp': String(Math.floor(sentAt.getTime() / 1000)),
          'webhook-signature': new Webhook(secrets.open(endpoint.secret, webhookSecretContext(endpoint.id))).sign(
            event.id,
            sentAt,
            payload,
          ),
        };
        if (trigger !== 'automatic') metrics.redeliveries.inc({ trigger });
        let response: WebhookAnswer;
        try {
          response = await http.post({ url: endpoint.url, headers, body: payload, timeoutMs: webhook.timeoutMs });
        } catch (err) {
          // The name resolved somewhere else at connection time (DNS rebinding): not sent.
          if (err instanceof DisallowedUrlError) return await refuse(err);
          const message = deliveryErrorMessage(err, webhook.timeoutMs);
          await attempted(null, message, false);
          metrics.webhookDeliveries.inc({ result: 'unreachable' });
          throw ApplicationFailure.retryable(`delivery to endpoint ${endpointId} failed: ${message}`, failureTypes.webhookUnreachable);
        }
        const ok = response.status >= 200 && response.status < 300;
        metrics.webhookDeliveries.inc({ result: ok ? 'delivered' : response.status === 410 ? 'gone' : 'rejected' });
        await attempted(response.status, ok ? null : `HTTP ${response.status}`, ok);
        if (ok) return 'delivered';
        if (response.status === 410) {
          // Standard Webhooks: 410 Gone means "stop sending to this endpoint".
          await disableEndpoint(pool, endpointId, 'endpoint answered 410 Gone');
          return 'endpoint_disabled';
        }
        throw ApplicationFailure.create({
          message: `endpoint ${endpointId} answered ${response.status}`,
          type: failureTypes.webhookRejected,
          nextRetryDelay: retryAfterMs(response.retryAfter),
        });
      } finally {
        if (held) await releaseDelivery(pool, event.id, endpointId, holder);
      }
    },
  };
  return activities;
}

export type WebhookActivities = ReturnType<typeof createWebhookActivities>;
