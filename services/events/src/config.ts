import { z } from "zod";
import { positiveInt } from "@dpp/kit";

/** The events service's own variables (the common ones come from the kit's service template). */
export const eventsEnv = {
  /** Feed events are deleted this many days after they entered the feed; 0 keeps them forever. */
  FEED_RETENTION_DAYS: z.coerce.number().int().min(0).default(90),
  /** How often the retention job runs. */
  FEED_RETENTION_INTERVAL_MS: positiveInt(3_600_000),
};
