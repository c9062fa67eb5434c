/**
 * A service run as its own process by drain.int.test.ts (`node --import tsx drain-service.ts [migrate|serve]`):
 * PassportService's GetPassport held for HOLD_MS before it answers, a leader job that logs each pass, and a drain
 * hook that logs, so that the test sees the order of a SIGTERM's drain on stdout.
 */
import { create } from "@bufbuild/protobuf";
import { passportV1 } from "@dpp/proto";
import { z } from "zod";
import { defineService, runService } from "../../src/index";

const drainService = defineService({
  name: "passport",
  schema: "drain_fixture",
  migrations: {},
  env: { HOLD_MS: z.coerce.number().int().default(1500) },
  grpcPort: 0,
  start: (rt) => {
    rt.job({
      name: "drain-fixture:tick",
      intervalMs: 50,
      lock: false,
      run: async () => {
        rt.log.info("job pass");
      },
    });
    rt.onDrain(() => rt.log.info("drain hook ran"));
    const answer = async () => {
      rt.log.info("call started");
      await new Promise((resolve) => setTimeout(resolve, rt.config.HOLD_MS));
      rt.log.info("call answered");
      return create(passportV1.GetPassportResponseSchema, {});
    };
    const impl = Object.fromEntries(passportV1.PassportService.methods.map((m) => [m.localName, answer]));
    rt.serve(passportV1.PassportService, impl as never);
  },
});

runService(drainService);
