/**
 * The SDK: `new Dpp({ apiKey, baseUrl })`, then `dpp.organization(id)` for everything an organization
 * owns. Each call is typed by the generated `paths` (openapi-fetch) and sent by the Transport, which
 * follows the spec's retry rules. A write that takes an Idempotency-Key gets a fresh one unless the
 * caller gives one. A refusal throws DppError; a success returns the body with a non-enumerable
 * `lastResponse` (status, Request-Id, Idempotency-Key, replayed, attempts).
 */
import {
  conditionalHeaders,
  Core,
  readSettings,
  writeSettings,
  type ConditionalOptions,
  type DppOptions,
  type RequestOptions,
  type WithResponse,
  type WriteOptions,
} from "./core";
import type { ListIterator } from "./pagination";
import { DppProtocolError } from "./errors";
import { Documents, PassportDocuments } from "./documents";
import { AffichageFilings, PublishApprovals } from "./filings";
import { Imports } from "./imports";
import { WebhookEndpoints } from "./webhooks";
import { Proposals } from "./proposals";
import { Units } from "./units";
import { Variants } from "./variants";
import {
  isCategory,
  type Capability,
  type Category,
  type CategorySchema,
  type Connection,
  type CreateGrantParams,
  type CreatePassportParams,
  type Event,
  type Grant,
  type KnownCategory,
  type ListEventsParams,
  type ListPassportsParams,
  type Passport,
  type PassportLinks,
  type PassportOf,
  type PublishedPassport,
  type PublishPassportParams,
  type RevokedGrant,
  type UpdatePassportParams,
  type ValidatePassportParams,
  type Validation,
  type Whoami,
} from "./types";

/** The passports of one organization, in the key's mode. */
export class Passports {
  constructor(
    private readonly core: Core,
    private readonly organization: string,
  ) {}

  private path(id: string) {
    return { path: { organization: this.organization, id } };
  }

  /** Creates a draft (version 1). The answer is typed by the category you created it in. */
  async create<C extends KnownCategory>(
    params: CreatePassportParams & { category: C },
    options: WriteOptions = {},
  ): Promise<WithResponse<PassportOf<C>>> {
    const passport = await this.core.send(writeSettings(options), (fetch) =>
      this.core.api.POST("/organizations/{organization}/passports", {
        params: { path: { organization: this.organization } },
        body: params,
        fetch,
      }),
    );
    if (!isCategory(passport, params.category))
      throw new DppProtocolError(
        `Created a ${params.category} passport, answered ${passport.category}.`,
        passport.lastResponse.status,
        passport.lastResponse.requestId,
      );
    return passport;
  }

  async get(id: string, options: RequestOptions = {}): Promise<WithResponse<Passport>> {
    return this.core.send(readSettings(options), (fetch) =>
      this.core.api.GET("/organizations/{organization}/passports/{id}", { params: this.path(id), fetch }),
    );
  }

  /** Applies a JSON Merge Patch to the passport: omitted keys stay, `null` removes a key. */
  async update(
    id: string,
    params: UpdatePassportParams,
    options: ConditionalOptions = {},
  ): Promise<WithResponse<Passport>> {
    return this.core.send(writeSettings(options), (fetch) =>
      this.core.api.PATCH("/organizations/{organization}/passports/{id}", {
        params: { ...this.path(id), header: conditionalHeaders(options) },
        body: params,
        fetch,
      }),
    );
  }

  /** Publishes a draft. A connector key gets DppError `human_approval_required` (status 202). */
  async publish(
    id: string,
    params: PublishPassportParams = {},
    options: ConditionalOptions = {},
  ): Promise<WithResponse<PublishedPassport>> {
    return this.core.send(writeSettings(options), (fetch) =>
      this.core.api.POST("/organizations/{organization}/passports/{id}/publish", {
        params: { ...this.path(id), header: conditionalHeaders(options) },
        body: params,
        fetch,
      }),
    );
  }

  async unpublish(id: string, options: ConditionalOptions = {}): Promise<WithResponse<Passport>> {
    return this.core.send(writeSettings(options), (fetch) =>
      this.core.api.POST("/organizations/{organization}/passports/{id}/unpublish", {
        params: { ...this.path(id), header: conditionalHeaders(options) },
        fetch,
      }),
    );
  }

  async trash(id: string, options: ConditionalOptions = {}): Promise<WithResponse<Passport>> {
    return this.core.send(writeSettings(options), (fetch) =>
      this.core.api.POST("/organizations/{organization}/passports/{id}/trash", {
        params: { ...this.path(id), header: conditionalHeaders(options) },
        fetch,
      }),
    );
  }

  async restore(id: string, options: ConditionalOptions = {}): Promise<WithResponse<Passport>> {
    return this.core.send(writeSettings(options), (fetch) =>
      this.core.api.POST("/organizations/{organization}/passports/{id}/restore", {
        params: { ...this.path(id), header: conditionalHeaders(options) },
        fetch,
      }),
    );
  }

  /** Checks the passport as publishing would; `{ dry_run: true }` keeps no record. Safe to repeat. */
  async validate(
    id: string,
    params: ValidatePassportParams = {},
    options: RequestOptions = {},
  ): Promise<WithResponse<Validation>> {
    return this.core.send(readSettings(options), (fetch) =>
      this.core.api.POST("/organizations/{organization}/passports/{id}/validate", {
        params: this.path(id),
        body: params,
        fetch,
      }),
    );
  }

  async links(id: string, options: RequestOptions = {}): Promise<WithResponse<PassportLinks>> {
    return this.core.send(readSettings(options), (fetch) =>
      this.core.api.GET("/organizations/{organization}/passports/{id}/links", {
        params: this.path(id),
        fetch,
      }),
    );
  }

  /** Newest first, page after page. */
  list(params: ListPassportsParams = {}, options: RequestOptions = {}): ListIterator<Passport> {
    const { cursor: start, ...filters } = params;
    return this.core.list(
      (cursor) =>
        this.core.send(readSettings(options), (fetch) =>
          this.core.api.GET("/organizations/{organization}/passports", {
            params: {
              path: { organization: this.organization },
              query: { ...filters, ...(cursor ? { cursor } : {}) },
            },
            fetch,
          }),
        ),
      start,
    );
  }
}

/** The organization's event feed, oldest first. */
export class Events {
  constructor(
    private readonly core: Core,
    private readonly organization: string,
  ) {}

  /**
   * Reads the feed from `cursor` (or its start) to its current end. After the loop, the iterator's
   * `cursor` is where to read on from later.
   */
  list(params: ListEventsParams = {}, options: RequestOptions = {}): ListIterator<Event> {
    const { cursor: start, ...filters } = params;
    return this.core.list(
      (cursor) =>
        this.core.send(readSettings(options), (fetch) =>
          this.core.api.GET("/organizations/{organization}/events", {
            params: {
              path: { organization: this.organization },
              query: { ...filters, ...(cursor ? { cursor } : {}) },
            },
            fetch,
          }),
        ),
      start,
    );
  }
}

/** Everything one organization owns, reached with the client's key (its own, or a client it is granted). */
export class OrganizationClient {
  readonly passports: Passports;
  readonly events: Events;
  readonly affichage: AffichageFilings;
  readonly publishApprovals: PublishApprovals;
  readonly imports: Imports;
  readonly documents: Documents;
  readonly passportDocuments: PassportDocuments;
  readonly webhooks: WebhookEndpoints;
  readonly proposals: Proposals;
  readonly variants: Variants;
  readonly units: Units;

  constructor(
    private readonly core: Core,
    readonly id: string,
  ) {
    this.passports = new Passports(core, id);
    this.events = new Events(core, id);
    this.affichage = new AffichageFilings(core, id);
    this.publishApprovals = new PublishApprovals(core, id);
    this.imports = new Imports(core, id);
    this.documents = new Documents(core, id);
    this.passportDocuments = new PassportDocuments(core, id);
    this.webhooks = new WebhookEndpoints(core, id);
    this.proposals = new Proposals(core, id);
    this.variants = new Variants(core, id);
    this.units = new Units(core, id);
  }

  /** What the organization can do (publishing, filing, uploads, live writes). */
  capabilities(options: RequestOptions = {}): ListIterator<Capability> {
    return this.core.list(
      () =>
        this.core.send(readSettings(options), (fetch) =>
          this.core.api.GET("/organizations/{organization}/capabilities", {
            params: { path: { organization: this.id } },
            fetch,
          }),
        ),
      undefined,
    );
  }

  /** Grants a key of your organization access to this (client) organization. Safe to repeat. */
  async grant(params: CreateGrantParams, options: RequestOptions = {}): Promise<WithResponse<Grant>> {
    return this.core.send(readSettings(options), (fetch) =>
      this.core.api.POST("/organizations/{organization}/grants", {
        params: { path: { organization: this.id } },
        body: params,
        fetch,
      }),
    );
  }

  /** Ends a key's grant on this organization. Safe to repeat. */
  async revokeGrant(keyId: string, options: RequestOptions = {}): Promise<WithResponse<RevokedGrant>> {
    return this.core.send(readSettings(options), (fetch) =>
      this.core.api.DELETE("/organizations/{organization}/grants/{keyId}", {
        params: { path: { organization: this.id, keyId } },
        fetch,
      }),
    );
  }
}

export class Dpp {
  private readonly core: Core;

  constructor(options: DppOptions) {
    this.core = new Core(options);
  }

  /** The client of one organization: the key's own, or a client it holds a grant on. */
  organization(id: string): OrganizationClient {
    return new OrganizationClient(this.core, id);
  }

  /** The calling key: its id, kind, mode, organization and scopes. */
  async whoami(options: RequestOptions = {}): Promise<WithResponse<Whoami>> {
    return this.core.send(readSettings(options), (fetch) => this.core.api.GET("/whoami", { fetch }));
  }

  /** The organizations the key reaches. */
  organizations(options: RequestOptions = {}): ListIterator<Connection> {
    return this.core.list(
      () => this.core.send(readSettings(options), (fetch) => this.core.api.GET("/organizations", { fetch })),
      undefined,
    );
  }

  /** The product categories. */
  categories(options: RequestOptions = {}): ListIterator<Category> {
    return this.core.list(
      () => this.core.send(readSettings(options), (fetch) => this.core.api.GET("/categories", { fetch })),
      undefined,
    );
  }

  /** A category's field schema (JSON Schema 2020-12). */
  async categorySchema(
    category: string,
    options: RequestOptions = {},
  ): Promise<WithResponse<CategorySchema>> {
    return this.core.send(readSettings(options), (fetch) =>
      this.core.api.GET("/categories/{category}/schema", { params: { path: { category } }, fetch }),
    );
  }
}
