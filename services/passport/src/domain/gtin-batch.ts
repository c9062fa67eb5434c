/** The batches of ClaimGtins and ReleaseGtins (from the variants service): their shape and GTINs. */
import { validationFailed, type Issue } from "@dpp/contract";
import { normalizeGtin } from "@dpp/contract";

export interface ClaimInput {
  gtin: string;
  passport_id: string;
  owner_id: string;
}

export const MAX_GTIN_BATCH = 1000;

/** Validates a claim or release batch: 1..1000 items, GTINs normalised to 14 digits, owners given, no GTIN twice. */
export function normalizeBatch(items: ClaimInput[], member: string, needPassport: boolean): ClaimInput[] {
  const issues: Issue[] = [];
  if (items.length < 1 || items.length > MAX_GTIN_BATCH)
    throw validationFailed([
      {
        source: { pointer: `/${member}` },
        rule: items.length < 1 ? "min_items" : "max_items",
        message: `Send 1 to ${MAX_GTIN_BATCH} items.`,
      },
    ]);
  const seen = new Map<string, number>();
  const out = items.map((c, i) => {
    const gtin = normalizeGtin(c.gtin);
    if (!gtin)
      issues.push({
        source: { pointer: `/${member}/${i}/gtin` },
        rule: /^(\d{8}|\d{12}|\d{13}|\d{14})$/.test(c.gtin) ? "gtin_check_digit" : "pattern",
        message: "A GTIN has 8, 12, 13 or 14 digits with a correct check digit.",
      });
    else if (seen.has(gtin))
      issues.push({
        source: { pointer: `/${member}/${i}/gtin` },
        rule: "unique_items",
        message: `GTIN ${gtin} is also item ${seen.get(gtin)}.`,
      });
    else seen.set(gtin, i);
    if (!c.owner_id || c.owner_id.length > 255)
      issues.push({
        source: { pointer: `/${member}/${i}/owner_id` },
        rule: "required",
        message: "owner_id is required.",
      });
    if (needPassport && (!c.passport_id || c.passport_id.length > 255))
      issues.push({
        source: { pointer: `/${member}/${i}/passport_id` },
        rule: "required",
        message: "passport_id is required.",
      });
    return { ...c, gtin: gtin ?? c.gtin };
  });
  if (issues.length) throw validationFailed(issues);
  return out;
}
