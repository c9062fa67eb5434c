/**
 * The public surface on the kit's service template (docs/decisions/0059-public-surface.md): its HTTP listener for
 * the public pages, QR codes and the GS1 Digital Link resolver, reading passport, documents and variants-units
 * with its own signed calls and keeping what it read in memory; its gRPC side purges that memory.
 */
import { defineService, type ServiceRuntime } from "@dpp/kit";
import { documentsV1, passportV1, publicSurfaceV1, variantsUnitsV1 } from "@dpp/proto";
import type { Kysely } from "kysely";
import { migrations } from "../migrations";
import { PublicViews } from "./app/views";
import { publicSurfaceEnv } from "./config";
import { startPublicServer } from "./http/server";

export const PUBLIC_SURFACE_SCHEMA = "public_surface";

export const publicSurfaceService = defineService({
  name: "public-surface",
  schema: PUBLIC_SURFACE_SCHEMA,
  migrations,
  env: publicSurfaceEnv,
  grpcPort: 50058,
  start: async (rt: ServiceRuntime<typeof publicSurfaceEnv, Record<string, never>>) => {
    const c = rt.config;
    const passport = rt.client(passportV1.PassportService, {
      address: c.PASSPORT_ADDR,
      audience: "passport",
    });
    const documents = rt.client(documentsV1.DocumentsService, {
      address: c.DOCUMENTS_ADDR,
      audience: "documents",
    });
    const variantsUnits = rt.client(variantsUnitsV1.VariantsUnitsService, {
      address: c.VARIANTS_UNITS_ADDR,
      audience: "variants-units",
    });
    const views = new PublicViews({
      passport,
      documents,
      variantsUnits,
      ttlMs: c.PUBLIC_CACHE_TTL_MS,
      maxEntries: c.PUBLIC_CACHE_MAX_ENTRIES,
    });
    const server = await startPublicServer({
      host: c.PUBLIC_SURFACE_HTTP_HOST,
      port: c.PUBLIC_SURFACE_HTTP_PORT,
      views,
      documents,
      resolverBaseUrl: c.RESOLVER_BASE_URL,
      publicBaseUrl: c.PUBLIC_BASE_URL,
      maxAgeSeconds: c.PUBLIC_MAX_AGE_SECONDS,
      ratePerMinute: c.PUBLIC_RATE_LIMIT_PER_MINUTE,
      trustProxy: c.TRUST_PROXY,
      resolverName: c.RESOLVER_NAME,
      resolverContact: c.RESOLVER_CONTACT,
      previewSecret: c.PREVIEW_SIGNING_SECRET,
      log: rt.log,
      metrics: rt.metrics,
      ready: () => !rt.draining(),
    });
    // Requests in flight finish (within SHUTDOWN_GRACE_MS) once the drain closes the listener.
    rt.onStop(() => server.close(c.SHUTDOWN_GRACE_MS));
    rt.log.info(
      { url: server.url, public_base_url: c.PUBLIC_BASE_URL, resolver_base_url: c.RESOLVER_BASE_URL },
      "public surface listening",
    );
    rt.serve(publicSurfaceV1.PublicSurfaceService, {
      purgeCache: (req) => ({ purged: views.purge(req.passportId || undefined) }),
    });
    return { views, server, db: rt.db as Kysely<Record<string, never>> };
  },
});
