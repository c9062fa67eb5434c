/** The one topic domain events travel on; message key = organization id. */
export const DOMAIN_EVENTS_TOPIC = "dpp.domain-events.v1";
