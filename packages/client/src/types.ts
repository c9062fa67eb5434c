/** Names for the generated types (src/openapi.generated.ts) that a caller of the SDK works with. */
import type { components, operations } from "./openapi.generated";

type Schemas = components["schemas"];

export type Passport = Schemas["Passport"];
export type PassportStatus = Schemas["PassportStatus"];
/** The categories this SDK was generated with. The set is open: a passport may carry another. */
export type KnownCategory = Schemas["CreatePassportRequest"]["category"];
/** A passport of one known category, its `data` typed by that category's field schema. */
export type PassportOf<C extends KnownCategory> = Extract<Passport, { category: C }>;
/** A passport of a category added after this SDK was generated: `data` is an open object. */
export type PassportOfOtherCategory = Schemas["PassportOfOtherCategory"];
export type PublishedPassport = Schemas["PublishedPassport"];
export type PublishWarning = Schemas["PublishWarning"];
export type CreatePassportParams = Schemas["CreatePassportRequest"];
export type UpdatePassportParams = Schemas["UpdatePassportRequest"];
export type PublishPassportParams = Schemas["PublishPassportRequest"];
export type ValidatePassportParams = Schemas["ValidatePassportRequest"];
export type Validation = Schemas["Validation"];
export type PassportLinks = Schemas["PassportLinks"];
export type Event = Schemas["Event"];
export type EventRelated = Schemas["EventRelated"];
export type Category = Schemas["Category"];
export type CategorySchema = Schemas["CategorySchema"];
export type Whoami = Schemas["Whoami"];
export type Connection = Schemas["Connection"];
export type Capability = Schemas["Capability"];
export type Grant = Schemas["Grant"];
export type RevokedGrant = Schemas["RevokedGrant"];
export type CreateGrantParams = Schemas["CreateGrantRequest"];
export type Scope = Schemas["Scope"];

type Query<Op extends keyof operations> = NonNullable<operations[Op]["parameters"]["query"]>;
/** Filters of the passport list; `cursor` starts from a page read earlier. */
export type ListPassportsParams = Query<"listPassports">;
/** Filters of the event feed; `cursor` reads on from where an earlier read ended. */
export type ListEventsParams = Query<"listEvents">;

/** True when the passport is of `category`; narrows it so that its `data` is typed. */
export function isCategory<C extends KnownCategory>(
  passport: Passport,
  category: C,
): passport is PassportOf<C> {
  return passport.category === category;
}
