/** The webhooks service's events: its endpoints' changes, and their disabling by the delivery workers. */
import { catalogueEntry } from "./entry";

/** `related` of webhook_endpoint.* events. */
export interface WebhookEndpointRelated {
  object: "webhook_endpoint";
  id: string;
  name: string;
  url: string;
  enabled: boolean;
  /** null, "gone" (the receiver answered 410) or "failing" (deliveries failed for too long). */
  disabled_reason: string | null;
}

const FIELDS = ["object", "id", "name", "url", "enabled", "disabled_reason"] as const;

export const EVENTS = {
  "webhook_endpoint.created": catalogueEntry<WebhookEndpointRelated>(
    "A webhook endpoint was created.",
    FIELDS,
  ),
  "webhook_endpoint.updated": catalogueEntry<WebhookEndpointRelated>(
    "A webhook endpoint's URL, types, description or enabled state was changed, or its secret rotated.",
    FIELDS,
  ),
  "webhook_endpoint.deleted": catalogueEntry<WebhookEndpointRelated>(
    "A webhook endpoint was deleted.",
    FIELDS,
  ),
  "webhook_endpoint.disabled": catalogueEntry<WebhookEndpointRelated>(
    'Deliveries disabled a webhook endpoint: its receiver answered 410 Gone (disabled_reason "gone"), or every delivery failed for longer than the platform allows (disabled_reason "failing").',
    FIELDS,
  ),
};
