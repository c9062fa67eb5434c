/**
 * Change proposals on published passports: `dpp.organization(id).proposals.create(passportId, fields)`,
 * `.get(id)` and `.withdraw(id)`. Only a connector key proposes and withdraws (`proposal_requires_assistant`
 * otherwise); a person of the organization accepts or rejects at the proposal's `review_url`.
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

export type PassportProposal = components["schemas"]["PassportProposal"];
export type ProposalFields = components["schemas"]["CreateProposalRequest"]["fields"];

/** The proposals of one organization, in the key's mode. */
export class Proposals {
  constructor(
    private readonly core: Core,
    private readonly organization: string,
  ) {}

  /** Proposes `fields` (the shape of a passport update) for a published passport; answers it `pending`. */
  async create(
    passportId: string,
    fields: ProposalFields,
    options: WriteOptions = {},
  ): Promise<WithResponse<PassportProposal>> {
    return this.core.send(writeSettings(options), (fetch) =>
      this.core.api.POST("/organizations/{organization}/passports/{id}/proposals", {
        params: { path: { organization: this.organization, id: passportId } },
        body: { fields },
        fetch,
      }),
    );
  }

  /** The proposal as of now (pending, out_of_date with `moved`, expired, withdrawn, accepted, rejected). */
  async get(id: string, options: RequestOptions = {}): Promise<WithResponse<PassportProposal>> {
    return this.core.send(readSettings(options), (fetch) =>
      this.core.api.GET("/organizations/{organization}/proposals/{id}", {
        params: { path: { organization: this.organization, id } },
        fetch,
      }),
    );
  }

  /** Withdraws a proposal nobody decided. */
  async withdraw(id: string, options: WriteOptions = {}): Promise<WithResponse<PassportProposal>> {
    return this.core.send(writeSettings(options), (fetch) =>
      this.core.api.POST("/organizations/{organization}/proposals/{id}/withdraw", {
        params: { path: { organization: this.organization, id } },
        fetch,
      }),
    );
  }
}
