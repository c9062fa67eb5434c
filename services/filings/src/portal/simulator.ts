/**
 * The affichage portal simulator: a small HTTP server that answers the portal's API as the filings service
 * speaks it (POST /produits, GET /produits/{gtin}, GET /organisation, GET /image), so that filing runs end to end
 * where the real portal cannot be reached. It is a simulator: its score is the simplified method of
 * simulated-score.ts, its answers say `simulated: true`, and it never presents itself as the official engine.
 *
 * Behaviours, switched by POST /_simulator/behaviour {"behaviour": ...}:
 *   normal              answers as the portal does
 *   slow                answers nothing until long past any deadline (every request)
 *   down                closes every connection without an answer
 *   record_then_timeout POST /produits records the declaration, then never answers; reads answer normally
 *   already_declared    POST /produits answers 208 "the product already exists", records nothing
 *   delegation_refused  GET /organisation lists no delegating brand; POST /produits answers 403
 * GET /_simulator/declarations lists every declaration recorded (its own record, for tests and operators);
 * POST /_simulator/reset forgets them and returns to normal.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import type { Declaration, DeclaredProduct } from "./port";
import { SIMULATED_ENGINE_VERSION, simulatedScore } from "./simulated-score";

export const BEHAVIOURS = [
  "normal",
  "slow",
  "down",
  "record_then_timeout",
  "already_declared",
  "delegation_refused",
] as const;
export type Behaviour = (typeof BEHAVIOURS)[number];

export interface PortalSimulatorOptions {
  port?: number;
  host?: string;
  /** The API key it accepts (Bearer). */
  apiKey: string;
  /** The brands that delegated filing to the platform's portal organisation. */
  authorizedBrands?: string[];
}

export interface PortalSimulator {
  url: string;
  close(): Promise<void>;
}

interface Recorded {
  declaration: Declaration;
  createdAt: string;
  requestId: string | null;
}

export async function startPortalSimulator(o: PortalSimulatorOptions): Promise<PortalSimulator> {
  let behaviour: Behaviour = "normal";
  let authorized = new Set(o.authorizedBrands ?? []);
  const declarations: Recorded[] = [];
  const held = new Set<http.ServerResponse>();

  const send = (res: http.ServerResponse, status: number, body: unknown) => {
    res.writeHead(status, { "content-type": "application/json", "x-portal-simulator": "true" });
    res.end(JSON.stringify(body));
  };
  const hold = (res: http.ServerResponse) => {
    held.add(res);
    res.on("close", () => held.delete(res));
  };
  const latest = (gtin: string) => {
    for (let i = declarations.length - 1; i >= 0; i--)
      if (declarations[i]!.declaration.gtins.includes(gtin)) return declarations[i]!;
    return undefined;
  };
  const sameDeclaration = (a: Declaration, b: Declaration) =>
    JSON.stringify(normalize(a)) === JSON.stringify(normalize(b));

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const url = new URL(req.url ?? "/", "http://simulator");
      const path = url.pathname;
      let body: unknown = undefined;
      try {
        body = chunks.length ? JSON.parse(Buffer.concat(chunks).toString("utf8")) : undefined;
      } catch {
        return send(res, 400, { error: "invalid_json" });
      }

      // Control routes, not part of the portal's API.
      if (path === "/_simulator/behaviour" && req.method === "POST") {
        const b = (body as { behaviour?: string } | undefined)?.behaviour;
        if (!(BEHAVIOURS as readonly string[]).includes(b ?? ""))
          return send(res, 400, { error: "unknown_behaviour", allowed: BEHAVIOURS });
        behaviour = b as Behaviour;
        return send(res, 200, { behaviour });
      }
      if (path === "/_simulator/brands" && req.method === "POST") {
        authorized = new Set((body as { brands?: string[] } | undefined)?.brands ?? []);
        return send(res, 200, { brands: [...authorized] });
      }
      if (path === "/_simulator/declarations" && req.method === "GET")
        return send(res, 200, { simulated: true, declarations });
      if (path === "/_simulator/reset" && req.method === "POST") {
        declarations.length = 0;
        behaviour = "normal";
        return send(res, 200, { behaviour });
      }

      if (behaviour === "down") return req.socket.destroy();
      if (behaviour === "slow") return hold(res);
      if (req.headers.authorization !== `Bearer ${o.apiKey}`)
        return send(res, 401, { message: "Clé d'API invalide." });

      if (path === "/organisation" && req.method === "GET")
        return send(res, 200, {
          simulated: true,
          name: "Platform (simulated portal organisation)",
          authorizedBy:
            behaviour === "delegation_refused" ? [] : [...authorized].map((id) => ({ id, name: id })),
          authorizedOrganizations: [],
        });

      if (path === "/produits" && req.method === "POST") {
        const d = body as Declaration | undefined;
        if (
          !d ||
          !Array.isArray(d.gtins) ||
          d.gtins.length === 0 ||
          !d.gtins.every((g) => /^(\d{8}|\d{13})$/.test(g))
        )
          return send(res, 400, { message: "gtins: GTIN-8 ou GTIN-13 attendu.", code: "invalid_value" });
        if (
          typeof d.internalReference !== "string" ||
          typeof d.mass !== "number" ||
          !Array.isArray(d.materials)
        )
          return send(res, 400, { message: "Paramètres invalides.", code: "invalid_value" });
        if (behaviour === "delegation_refused" || !authorized.has(d.brandId))
          return send(res, 403, { message: "Vous n'êtes pas autorisé à déclarer pour cette marque." });
        if (behaviour === "already_declared") return send(res, 208, { message: "Le produit existe déjà." });
        const prev = latest(d.gtins[0]!);
        if (prev && sameDeclaration(prev.declaration, d))
          return send(res, 208, { message: "Le produit existe déjà." });
        declarations.push({
          declaration: normalize(d),
          createdAt: new Date().toISOString(),
          requestId: (req.headers["x-request-id"] as string | undefined) ?? null,
        });
        if (behaviour === "record_then_timeout") return hold(res);
        return send(res, 201, { result: "success" });
      }

      const m = /^\/produits\/(\d{8}|\d{13})$/.exec(path);
      if (m && req.method === "GET") {
        const r = latest(m[1]!);
        if (!r) return send(res, 404, { message: "Produit introuvable." });
        const s = simulatedScore(r.declaration);
        const out: DeclaredProduct & { simulated: true } = {
          simulated: true,
          gtin: m[1]!,
          internalReference: r.declaration.internalReference,
          brandId: r.declaration.brandId,
          score: s.score,
          standardized: s.standardized,
          durability: s.durability,
          upload: { version: SIMULATED_ENGINE_VERSION, createdAt: r.createdAt },
          declaration: r.declaration,
        };
        return send(res, 200, out);
      }
      if (path === "/image" && req.method === "GET") {
        res.writeHead(200, { "content-type": "image/svg+xml", "x-portal-simulator": "true" });
        return res.end(
          `<svg xmlns="http://www.w3.org/2000/svg" width="240" height="40"><text x="4" y="24">Simulated score, not official: ${url.searchParams.get("gtin") ?? ""}</text></svg>`,
        );
      }
      return send(res, 404, { message: "Route inconnue." });
    });
  });

  await new Promise<void>((resolve) => server.listen(o.port ?? 0, o.host ?? "127.0.0.1", resolve));
  const addr = server.address() as AddressInfo;
  return {
    url: `http://${addr.address}:${addr.port}`,
    close: async () => {
      for (const r of held) r.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** The declaration's members in one order, so that two equal declarations compare equal. */
function normalize(d: Declaration): Declaration {
  return {
    gtins: [...d.gtins],
    internalReference: d.internalReference,
    brandId: d.brandId,
    mass: d.mass,
    materials: d.materials.map((x) => ({ id: x.id, share: x.share })),
    countryMaking: d.countryMaking ?? null,
  };
}
