import type { Kysely } from "kysely";
import type { PassportStore } from "../store";
import type { PassportDB } from "../store/schema";
import type { LinkHosts } from "../domain/links";
import type { PrePublishCheck } from "../domain/prepublish";

export interface PassportAppOptions {
  hosts: LinkHosts;
  reviewBaseUrl: string;
  docsBaseUrl: string;
  checks: PrePublishCheck;
  /** Called after a transaction that wrote events committed (wakes the outbox relay). */
  onCommitted: () => void;
}

/** What every use case is given: the store and the service's settings. */
export interface PassportApp extends PassportAppOptions {
  store: PassportStore;
  /** The pool, for the kit's keyed items (CreatePassports' rows: runKeyedItems). */
  db: Kysely<PassportDB>;
}
