import type { Server } from "node:http";
import { sql } from "kysely";
import { closeConnectionsWhileDraining, closeHttpServer, defineService, type ServiceRuntime } from "@dpp/kit";
import { migrations } from "../migrations";
import { gatewayEnv } from "./config";
import { connectDownstream } from "./downstream.generated";
import type { GatewayDB } from "./store/schema";
import { IdentityRepository } from "./modules/identity/identity.repository";
import { Authenticator } from "./modules/identity/authenticator";
import { createApp } from "./http/app";
import { answerClientErrors } from "./http/client-errors";
import { gatewayModules } from "./modules";
import { routeTable } from "./routes";
import { IdentityCache, listenForIdentityChanges } from "./modules/identity/identity-cache";
import type { ChangeListener } from "./store/change-listener";
import { RateLimiter } from "./ratelimit/limiter";
import { reviewRouter } from "./review/page";

export const GATEWAY_SCHEMA = "gateway";

/**
 * The gateway on the kit's service template: its store, one client per downstream service, the identity cache,
 * rate limits and the HTTP server. Stop hooks run last-registered first, so the HTTP server
 * drains before anything it uses is closed.
 */
export const gatewayService = defineService({
  name: "gateway",
  schema: GATEWAY_SCHEMA,
  migrations,
  env: gatewayEnv,
  // grant.* events: the gateway's own outbox, relayed to the bus like every service's.
  outbox: true,
  start: async (rt: ServiceRuntime<typeof gatewayEnv, GatewayDB>) => {
    const { config, db, log } = rt;
    const identityCache = new IdentityCache({
      keyTtlMs: config.KEY_CACHE_TTL_MS,
      organizationTtlMs: config.ORGANIZATION_CACHE_TTL_MS,
      grantTtlMs: config.GRANT_CACHE_TTL_MS,
    });
    const identity = new IdentityRepository(db, rt.eventsCommitted, (change) => identityCache.apply(change));
    const clients = connectDownstream(rt, config.GRPC_DEADLINE_MS);
    let identityListener: ChangeListener | undefined;
    if (identityCache.enabled) {
      const listener = listenForIdentityChanges(config.DATABASE_URL, GATEWAY_SCHEMA, identityCache, log);
      rt.onStop(() => listener.stop());
      identityListener = listener;
    }
    const rateLimiter = new RateLimiter({
      redisUrl: config.REDIS_URL,
      keyPrefix: config.RATE_LIMIT_KEY_PREFIX,
      perKeyPerMinute: config.RATE_LIMIT_PER_KEY_PER_MINUTE,
      anonymousPerMinute: config.RATE_LIMIT_ANONYMOUS_PER_MINUTE,
      authFailuresPerMinute: config.RATE_LIMIT_AUTH_FAILURES_PER_MINUTE,
      log,
      metrics: rt.metrics,
    });
    rt.onStop(() => rateLimiter.close());
    const app = createApp({
      authenticator: new Authenticator(identity, undefined, identityCache),
      rateLimiter,
      routes: routeTable(gatewayModules({ identity, ...clients })),
      log,
      docsBaseUrl: config.DOCS_BASE_URL,
      trustProxy: config.TRUST_PROXY,
      review: reviewRouter({
        db,
        identity,
        passport: clients.passport,
        variantsUnits: clients.variantsUnits,
        rateLimiter,
      }),
      // Not ready from SIGTERM on (the kit's drain), so that the load balancer stops sending requests here.
      ready: async () => {
        if (rt.draining()) throw new Error("draining");
        await sql`select 1`.execute(db);
      },
      metrics: rt.metrics,
    });
    const server = await new Promise<Server>((resolve, reject) => {
      const s = app.listen(config.HTTP_PORT, config.HTTP_HOST, (err?: Error) =>
        err ? reject(err) : resolve(s),
      );
      answerClientErrors(s, config.DOCS_BASE_URL);
    });
    server.keepAliveTimeout = 65_000;
    closeConnectionsWhileDraining(server, rt.draining);
    rt.onStop(() => closeHttpServer(server, config.SHUTDOWN_GRACE_MS));
    const addr = server.address();
    const port = typeof addr === "object" && addr ? addr.port : config.HTTP_PORT;
    log.info({ host: config.HTTP_HOST, port }, "gateway listening");
    return { port, server, identityCache, identityListener };
  },
});
