/** The last step of a route: its handler, then the answer (recorded first when an idempotency key is claimed). */
import type { Request, Response } from "express";
import type { Logger } from "@dpp/kit";
import type { IdempotencyStore } from "../../idempotency/idempotency";
import type { Route } from "../route";
import { settleIdempotency } from "./idempotency";
import { contextOf, locals } from "./locals";

export function dispatch(route: Route, store: IdempotencyStore | undefined, log: Logger) {
  return async (req: Request, res: Response) => {
    const l = locals(res);
    const out = await route.handler({
      params: req.params as Record<string, string>,
      query: req.query as Record<string, unknown>,
      body: req.body,
      ctx: contextOf(res),
      key: l.key,
      access: l.access,
      conditional: l.conditional,
    });
    const status = route.successStatus;
    const text = JSON.stringify(out.body);
    await settleIdempotency(store, log, res, { record: { status, body: text, headers: out.headers ?? {} } });
    if (out.headers) for (const [k, v] of Object.entries(out.headers)) res.setHeader(k, v);
    res.status(status).type("application/json").send(text);
  };
}
