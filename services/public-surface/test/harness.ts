/**
 * Runs the public surface in-process on its own test database (its owners are not started: what needs them is
 * tested end to end, test-e2e/public-*.e2e.test.ts) and calls its gRPC side with the kit's client.
 */
import { type ClientOf } from "@dpp/kit";
import { startServiceUnderTest, type UnderTest } from "@dpp/kit/testing";
import { publicSurfaceV1 } from "@dpp/proto";
import { publicSurfaceService } from "../src/service";

export type PublicSurfaceClient = ClientOf<typeof publicSurfaceV1.PublicSurfaceService>;

export interface Harness {
  service: UnderTest<typeof publicSurfaceService>;
  client: PublicSurfaceClient;
  close(): Promise<void>;
}

export async function startHarness(label: string): Promise<Harness> {
  const service = await startServiceUnderTest(publicSurfaceService, { PUBLIC_SURFACE_HTTP_PORT: "0" }, label);
  return {
    service,
    client: service.client(publicSurfaceV1.PublicSurfaceService),
    close: () => service.close(),
  };
}
