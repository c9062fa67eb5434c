/**
 * The rule that says which calls the kit sends again when a service is unavailable (grpc.ts safeToRepeat;
 * docs/decisions/0061-grpc-load-balancing.md), checked over every service of @dpp/proto: a method named like a
 * read declares an idempotency level in its proto, and only such methods declare NO_SIDE_EFFECTS. A new method
 * cannot be left out of the retries, or let into them, without this test saying so.
 */
import type { DescService } from "@bufbuild/protobuf";
import { MethodOptions_IdempotencyLevel as Level } from "@bufbuild/protobuf/wkt";
import * as proto from "@dpp/proto";
import { safeToRepeat } from "./grpc";

const READ_NAME = /^(Get|List|Find|Read|Check)[A-Z]/;

const services: DescService[] = Object.values(proto as Record<string, unknown>)
  .filter((ns): ns is Record<string, unknown> => typeof ns === "object" && ns !== null)
  .flatMap((ns) => Object.values(ns))
  .filter((v): v is DescService => (v as { kind?: unknown } | null)?.kind === "service")
  .filter((s) => s.typeName.startsWith("dpp."));

const methods = services.flatMap((s) => s.methods.map((m) => ({ name: `${s.typeName}/${m.name}`, m })));

describe("which calls are safe to send again", () => {
  it("finds every dpp service", () => {
    expect(services.map((s) => s.typeName)).toEqual(
      expect.arrayContaining([
        "dpp.passport.v1.PassportService",
        "dpp.events.v1.EventsService",
        "dpp.webhooks.v1.WebhooksService",
        "dpp.documents.v1.DocumentsService",
      ]),
    );
  });

  it.each(methods.filter(({ m }) => READ_NAME.test(m.name)).map(({ name, m }) => [name, m]))(
    "%s, named like a read, declares idempotency_level (NO_SIDE_EFFECTS, or IDEMPOTENT when it settles state)",
    (_name, m) => {
      expect([Level.NO_SIDE_EFFECTS, Level.IDEMPOTENT]).toContain(m.idempotency);
      expect(safeToRepeat(m)).toBe(true);
    },
  );

  it("declares NO_SIDE_EFFECTS only on methods named like reads", () => {
    const offenders = methods
      .filter(({ m }) => m.idempotency === Level.NO_SIDE_EFFECTS && !READ_NAME.test(m.name))
      .map(({ name }) => name);
    expect(offenders).toEqual([]);
  });

  it("leaves writes to their Idempotency-Key: a write declares no level and is not safe by itself", () => {
    const passport = services.find((s) => s.typeName === "dpp.passport.v1.PassportService")!;
    for (const name of [
      "CreatePassport",
      "UpdatePassport",
      "PublishPassport",
      "ClaimGtins",
      "ValidatePassport",
    ])
      expect(safeToRepeat(passport.methods.find((m) => m.name === name)!)).toBe(false);
    expect(safeToRepeat(passport.methods.find((m) => m.name === "GetPassport")!)).toBe(true);
  });
});
