/**
 * The HTTP adapter of the portal port: the portal's API at PORTAL_BASE_URL with a Bearer API key, each request
 * bounded by PORTAL_TIMEOUT_MS and by the call's own deadline (the signal it is given).
 */
import {
  PortalUnavailable,
  type Declaration,
  type DeclareOutcome,
  type DeclaredProduct,
  type PortalPort,
} from "./port";

export interface HttpPortalOptions {
  baseUrl: string;
  apiKey: string;
  timeoutMs: number;
  fetch?: typeof fetch;
}

export function httpPortal(o: HttpPortalOptions): PortalPort {
  const base = o.baseUrl.replace(/\/+$/, "");
  const doFetch = o.fetch ?? fetch;

  const request = async (
    method: "GET" | "POST",
    path: string,
    signal: AbortSignal,
    body?: unknown,
    headers: Record<string, string> = {},
  ): Promise<{ status: number; json: unknown }> => {
    const timeout = AbortSignal.timeout(o.timeoutMs);
    const both = AbortSignal.any([signal, timeout]);
    let res: Response;
    try {
      res = await doFetch(`${base}${path}`, {
        method,
        signal: both,
        headers: {
          authorization: `Bearer ${o.apiKey}`,
          accept: "application/json",
          ...(body === undefined ? {} : { "content-type": "application/json" }),
          ...headers,
        },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const text = await res.text();
      let json: unknown = undefined;
      try {
        json = text ? JSON.parse(text) : undefined;
      } catch {
        json = undefined;
      }
      if (res.status >= 500)
        throw new PortalUnavailable(
          "server_error",
          `The portal answered ${res.status} to ${method} ${path}.`,
        );
      return { status: res.status, json };
    } catch (e) {
      if (e instanceof PortalUnavailable) throw e;
      if (both.aborted)
        throw new PortalUnavailable("timeout", `The portal did not answer ${method} ${path} in time.`);
      throw new PortalUnavailable("unreachable", `The portal could not be reached (${method} ${path}).`);
    }
  };

  return {
    async authorizedBrands(signal) {
      const r = await request("GET", "/organisation", signal);
      if (r.status !== 200)
        throw new PortalUnavailable("unexpected_answer", `GET /organisation answered ${r.status}.`);
      const by = (r.json as { authorizedBy?: { id?: unknown }[] } | undefined)?.authorizedBy ?? [];
      return by.map((b) => b.id).filter((id): id is string => typeof id === "string");
    },

    async declare(d: Declaration, requestId, signal): Promise<DeclareOutcome> {
      const r = await request("POST", "/produits", signal, d, { "x-request-id": requestId });
      // Only 201 and 208 are successes: a 200 carries a warning and declares nothing.
      if (r.status === 201) return { kind: "created" };
      if (r.status === 208) return { kind: "already_declared" };
      if (r.status === 403)
        return {
          kind: "forbidden",
          message: String((r.json as { message?: unknown } | undefined)?.message ?? "forbidden"),
        };
      throw new PortalUnavailable(
        "unexpected_answer",
        `POST /produits answered ${r.status}: ${JSON.stringify(r.json ?? null).slice(0, 200)}`,
      );
    },

    async product(gtin, signal) {
      const r = await request("GET", `/produits/${encodeURIComponent(gtin)}`, signal);
      if (r.status === 404) return undefined;
      if (r.status !== 200)
        throw new PortalUnavailable("unexpected_answer", `GET /produits/${gtin} answered ${r.status}.`);
      return r.json as DeclaredProduct;
    },

    labelUrl: (gtin) => `${base}/image?type=score&gtin=${encodeURIComponent(gtin)}`,
  };
}
