/** The route's auth mode: the key, the organization in the path and the route's scope. */
import type { NextFunction, Request, Response } from "express";
import type { Authenticator } from "../../modules/identity/authenticator";
import type { RouteSpec } from "../route";
import { locals } from "./locals";

export function authenticate(spec: RouteSpec, auth: Authenticator) {
  return async (req: Request, res: Response, next: NextFunction) => {
    if (spec.auth === "none") return next();
    const header = req.headers.authorization;
    if (spec.auth === "optional" && header === undefined) return next();
    const key = await auth.authenticate(header);
    locals(res).key = key;
    if (spec.auth === "organization") {
      const access = await auth.resolveOrganization(key, req.params.organization as string);
      if (spec.scope) auth.requireScope(access, spec.scope);
      locals(res).access = access;
    } else if (spec.auth === "grantor") {
      // Grant endpoints: the key's scopes on its own organization, never a grant (see resolveGrantTarget).
      const access = await auth.resolveGrantTarget(key, req.params.organization as string);
      if (spec.scope) auth.requireScope(access, spec.scope);
      locals(res).access = access;
    }
    next();
  };
}
