/** The Idempotency-Key steps of the chain (the records themselves are src/idempotency/idempotency.ts). */
import type { NextFunction, Request, Response } from "express";
import type { Logger } from "@dpp/kit";
import {
  fingerprintOf,
  IDEMPOTENCY_HEADER,
  readIdempotencyKey,
  REPLAYED_HEADER,
  type IdempotencyStore,
  type RecordedResponse,
} from "../../idempotency/idempotency";
import type { RouteSpec } from "../route";
import { locals } from "./locals";

/** 400 for a malformed Idempotency-Key before anything is claimed (the client retries with the same key). */
export function idempotencyKeySyntax(spec: RouteSpec) {
  return (req: Request, res: Response, next: NextFunction) => {
    if (!spec.idempotent) return next();
    const values = req.headersDistinct[IDEMPOTENCY_HEADER];
    locals(res).idempotencyKey = readIdempotencyKey(values?.length === 1 ? values[0] : values);
    next();
  };
}

/** The normalised request path of a route: /v1 + the spec path with the parameters filled in. */
function canonicalPath(spec: RouteSpec, params: Record<string, string>): string {
  return (
    "/v1" + spec.path.replace(/\{(\w+)\}/g, (_m, name: string) => encodeURIComponent(params[name] ?? ""))
  );
}

/** Claims the key (in flight), or replays the recorded answer, or refuses (conflict / busy). */
export function idempotencyClaim(spec: RouteSpec, store: IdempotencyStore | undefined) {
  return async (req: Request, res: Response, next: NextFunction) => {
    const l = locals(res);
    if (!spec.idempotent || !store || l.idempotencyKey === undefined || !l.key) return next();
    const path = canonicalPath(spec, req.params as Record<string, string>);
    const result = await store.claim(
      {
        organizationId: l.access?.organization.id ?? "",
        livemode: l.key.livemode,
        callerOrganizationId: l.key.organization_id,
        key: l.idempotencyKey,
      },
      fingerprintOf(req.method, path, req.body),
      { method: req.method, path, requestId: l.requestId, keyId: l.key.id },
    );
    if (result.kind === "replay") {
      const r = result.response;
      for (const [k, v] of Object.entries(r.headers)) res.setHeader(k, v);
      res.setHeader(REPLAYED_HEADER, "true");
      res.status(r.status).type("application/json").send(r.body);
      return;
    }
    l.idempotencyClaim = result.id;
    next();
  };
}

/** Records the answer against the claimed key (before it is sent), or releases the key. */
export async function settleIdempotency(
  store: IdempotencyStore | undefined,
  log: Logger,
  res: Response,
  outcome: { record: RecordedResponse } | { release: true },
): Promise<void> {
  const l = locals(res);
  const id = l.idempotencyClaim;
  if (id === undefined || !store) return;
  l.idempotencyClaim = undefined;
  try {
    if ("record" in outcome) await store.finish(id, outcome.record);
    else await store.release(id);
  } catch (err) {
    log.error({ err, request_id: l.requestId }, "could not settle the idempotency record; releasing it");
    await store.release(id).catch(() => undefined);
  }
}
