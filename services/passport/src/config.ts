import { z } from "zod";
import { address, loadConfig, serviceEnv } from "@dpp/kit";

export const passportEnv = z.object({
  ...serviceEnv,
  GRPC_ADDR: address.default("0.0.0.0:50051"),
  BUS_DATABASE_URL: serviceEnv.DATABASE_URL.optional(),
});

export type PassportConfig = z.infer<typeof passportEnv>;

export const loadPassportConfig = (env: Record<string, string | undefined> = process.env) =>
  loadConfig(passportEnv, env);
