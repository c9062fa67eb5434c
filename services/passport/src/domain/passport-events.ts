/** The `related` object of passport.* events, shaped like the spec's passport.published sample. */
export interface PassportSnapshot {
  organization_id: string;
  id: string;
  category: string;
  status: string;
  version: number;
}

export function passportRelated(p: PassportSnapshot, previousStatus: string | null) {
  return {
    object: "passport",
    id: p.id,
    name: `organizations/${p.organization_id}/passports/${p.id}`,
    category: p.category,
    status: p.status,
    previous_status: previousStatus,
    version: p.version,
  };
}
