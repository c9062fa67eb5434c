/** The envelope of every domain event, from a service's outbox to the public feed. */
export interface DomainEvent {
  /** Event id (evt_...), the deduplication key all the way to the feed. */
  id: string;
  /** `<resource>.<verb>`, e.g. passport.created. */
  type: string;
  organization_id: string;
  livemode: boolean;
  /** RFC 3339 UTC, when the state change committed (its transaction's time). */
  created_at: string;
  /** The affected resource at the time, shaped per event type. */
  related: Record<string, unknown>;
}
