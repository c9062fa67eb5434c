/**
 * Created the idempotency table (docs/decisions/0018-idempotency-with-the-write.md) until the kit made its own
 * tables: the service template now creates them for a service that declares `idempotency`, before its
 * migrations (docs/decisions/0050-keyed-calls-fail-closed-and-effects-once.md). Kept, as a no-op, so that the
 * migration history of databases that ran it stays valid.
 */
export async function up(): Promise<void> {}
