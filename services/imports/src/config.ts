import { z } from "zod";

/** The imports service's own variables (the common ones come from the kit's service template). */
export const importsEnv = {
  /** Longest label accepted. */
  IMPORTS_LABEL_MAX_LENGTH: z.coerce.number().int().min(1).max(10_000).default(200),
};
