/**
 * @dpp/client: the TypeScript SDK of the DPP API v1 (README.md; docs/decisions/0017-client-contract-and-sdk.md).
 * The types come from the OpenAPI document (src/openapi.generated.ts, `npm run -s gen:openapi`);
 * the rest is the small layer that follows the spec's rules.
 */
export { Dpp, Events, OrganizationClient, Passports } from "./client";
export {
  Documents,
  DppUploadError,
  PassportDocuments,
  type Document,
  type DocumentDownload,
  type DocumentUpload,
  type ListDocumentsParams,
  type PassportDocument,
  type UploadDocumentParams,
} from "./documents";
export {
  AffichageFilings,
  PublishApprovals,
  type Affichage,
  type AffichageFiling,
  type PublishApproval,
} from "./filings";
export { Proposals, type PassportProposal, type ProposalFields } from "./proposals";
export {
  IMPORT_JOB_MAX_ROWS,
  Imports,
  type ImportJob,
  type ImportJobStatus,
  type ImportJobWithRows,
  type ImportProgress,
  type ImportRow,
  type ImportRowInput,
  type ImportRowResult,
  type ImportRowsOptions,
  type ListImportsParams,
} from "./imports";
export {
  verifyWebhook,
  WebhookEndpoints,
  WebhookVerificationError,
  type CreateWebhookEndpoint,
  type DeletedWebhookEndpoint,
  type UpdateWebhookEndpoint,
  type WebhookAttempt,
  type WebhookDelivery,
  type WebhookEndpoint,
  type WebhookEndpointWithSecret,
} from "./webhooks";
export {
  Variants,
  type DeletedVariant,
  type ListVariantsParams,
  type NewVariant,
  type Variant,
  type VariantList,
  type VariantRemoval,
  type VariantReview,
} from "./variants";
export {
  Units,
  type ListReadingsParams,
  type ListUnitsParams,
  type NewUnit,
  type NewUnitReading,
  type Unit,
  type UnitList,
  type UnitReading,
} from "./units";
export {
  SDK_VERSION,
  type ConditionalOptions,
  type DppOptions,
  type RequestOptions,
  type ResponseInfo,
  type WithResponse,
  type WriteOptions,
} from "./core";
export {
  DppConnectionError,
  DppError,
  DppProtocolError,
  isDppError,
  type ErrorCode,
  type ErrorDetails,
  type KnownErrorCode,
} from "./errors";
export { ListIterator, type Page } from "./pagination";
export { newIdempotencyKey, type RetryEvent } from "./transport";
export * from "./types";
export type { components, operations, paths } from "./openapi.generated";
