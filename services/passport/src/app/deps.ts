import type { PassportStore } from "../store";
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
}
