/** The last step of a route: its handler, then the answer (marked when a service replayed a recorded result). */
import type { Request, Response } from "express";
import { REPLAYED_HEADER } from "@dpp/kit";
import { jsonText } from "../json";
import type { Route } from "../route";
import { contextOf, locals } from "./locals";

export function dispatch(route: Route) {
  return async (req: Request, res: Response) => {
    const l = locals(res);
    const ctx = contextOf(res);
    const out = await route.handler({
      params: req.params as Record<string, string>,
      query: req.query as Record<string, unknown>,
      body: req.body,
      ctx,
      key: l.key,
      access: l.access,
      conditional: l.conditional,
    });
    if (out.headers) for (const [k, v] of Object.entries(out.headers)) res.setHeader(k, v);
    if (ctx.outcome?.idempotentReplayed) res.setHeader(REPLAYED_HEADER, "true");
    res.status(route.successStatus).type("application/json").send(jsonText(out.body));
  };
}
