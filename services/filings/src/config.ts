import { z } from "zod";
import { address, positiveInt } from "@dpp/kit";

/** An absolute http(s) URL, kept without its trailing slashes; empty means unset. */
const optionalBaseUrl = z
  .string()
  .default("")
  .refine((v) => {
    if (v === "") return true;
    try {
      const u = new URL(v);
      return (u.protocol === "https:" || u.protocol === "http:") && !u.search && !u.hash;
    } catch {
      return false;
    }
  }, "expected an absolute http(s) URL without query or fragment, or nothing")
  .transform((v) => v.replace(/\/+$/, ""));

/** The filings service's own variables (the common ones come from the kit's service template). */
export const filingsEnv = {
  /** The passport service, read for the passport a filing declares. */
  PASSPORT_ADDR: address.default("127.0.0.1:50051"),
  /**
   * The affichage portal's API (the real one, its test site, or the portal simulator `npm start` runs). Unset:
   * no filing can reach a portal, and the capability says api_filing_supported false.
   */
  PORTAL_BASE_URL: optionalBaseUrl,
  /** The platform's Bearer API key at the portal. */
  PORTAL_API_KEY: z.string().default(""),
  /** The longest wait for one portal request; the call's own deadline bounds it too. */
  PORTAL_TIMEOUT_MS: positiveInt(2_000),
};
