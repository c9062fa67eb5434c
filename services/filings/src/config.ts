import { z } from "zod";

/** The filings service's own variables (the common ones come from the kit's service template). */
export const filingsEnv = {
  /** Longest label accepted. */
  FILINGS_LABEL_MAX_LENGTH: z.coerce.number().int().min(1).max(10_000).default(200),
};
