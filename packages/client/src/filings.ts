/**
 * The French affichage filing of a passport: `dpp.organization(id).affichage.get(passportId)` and
 * `.file(passportId)`. Filing takes an Idempotency-Key (a fresh one unless given): after a 502
 * `portal_unavailable` retry with a NEW key; the platform asks the portal what it recorded before filing again.
 */
import {
  Core,
  readSettings,
  writeSettings,
  type RequestOptions,
  type WithResponse,
  type WriteOptions,
} from "./core";
import type { components } from "./openapi.generated";

export type Affichage = components["schemas"]["Affichage"];
export type AffichageFiling = components["schemas"]["AffichageFiling"];
export type PublishApproval = components["schemas"]["PublishApproval"];

/** The affichage declarations of one organization's passports, in the key's mode. */
export class AffichageFilings {
  constructor(
    private readonly core: Core,
    private readonly organization: string,
  ) {}

  private path(id: string) {
    return { path: { organization: this.organization, id } };
  }

  /** The passport's filing state and what blocks a filing now. */
  async get(passportId: string, options: RequestOptions = {}): Promise<WithResponse<Affichage>> {
    return this.core.send(readSettings(options), (fetch) =>
      this.core.api.GET("/organizations/{organization}/passports/{id}/affichage", {
        params: this.path(passportId),
        fetch,
      }),
    );
  }

  /** Files the passport's declaration with the portal (filings:write, live keys only). */
  async file(passportId: string, options: WriteOptions = {}): Promise<WithResponse<AffichageFiling>> {
    return this.core.send(writeSettings(options), (fetch) =>
      this.core.api.POST("/organizations/{organization}/passports/{id}/affichage", {
        params: this.path(passportId),
        fetch,
      }),
    );
  }
}

/**
 * The publish approvals of one organization: a connector's publish answers DppError `human_approval_required`
 * (status 202) whose `details.approval_id` names one.
 */
export class PublishApprovals {
  constructor(
    private readonly core: Core,
    private readonly organization: string,
  ) {}

  async get(id: string, options: RequestOptions = {}): Promise<WithResponse<PublishApproval>> {
    return this.core.send(readSettings(options), (fetch) =>
      this.core.api.GET("/organizations/{organization}/publish-approvals/{id}", {
        params: { path: { organization: this.organization, id } },
        fetch,
      }),
    );
  }
}
