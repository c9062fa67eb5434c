/** Identity records (keys, connections) as the public JSON shapes; grants map in grants.ts. */
import type { ConnectionRecord, KeyRecord } from "./identity.repository";

export function whoamiJson(k: KeyRecord) {
  return {
    object: "whoami" as const,
    key_id: k.id,
    key_name: k.name,
    kind: k.kind,
    livemode: k.livemode,
    organization_id: k.organization_id,
    scopes: k.scopes,
    created_at: k.created_at.toISOString(),
    expires_at: k.expires_at?.toISOString() ?? null,
    rotation_overlap_ends_at: k.rotation_overlap_ends_at?.toISOString() ?? null,
  };
}

export function connectionJson(c: ConnectionRecord) {
  return {
    object: "connection" as const,
    organization_id: c.organization_id,
    name: `organizations/${c.organization_id}`,
    display_name: c.display_name,
    link_status: c.link_status,
    scopes: c.scopes,
    granted_at: c.granted_at.toISOString(),
  };
}
