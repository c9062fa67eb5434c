/**
 * Created the gateway's outbox (grant.* events are recorded with the grant change that causes them) until the
 * kit made its own tables: the service template now creates it for a service that declares `outbox`, before its
 * migrations (docs/decisions/0050-keyed-calls-fail-closed-and-effects-once.md). Kept, as a no-op, so that the
 * migration history of databases that ran it stays valid.
 */
export async function up(): Promise<void> {}
