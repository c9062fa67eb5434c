/**
 * The trust boundary of a gRPC service as an attacker on its network would probe it, as one jest suite: a
 * direct call with a made-up context, with a genuine token rewritten to another organization or mode, with a
 * token signed by a key the service does not trust, or with a genuine token used for another method, is
 * refused UNAUTHENTICATED and changes nothing; the same calls signed by the trusted caller for the tenant
 * itself are answered. docs/decisions/0012-internal-authentication.md.
 *
 *   let h: Harness;
 *   beforeAll(async () => { h = await startHarness("things_trust"); });
 *   afterAll(() => h?.close());
 *   describeTrustBoundary(thingsV1.ThingsService, {
 *     under: () => h.service,
 *     calls: [
 *       { method: "listThings", request: () => ({}) },
 *       { method: "createThing", request: () => ({ name: "forged" }) },
 *     ],
 *     snapshot: () => h.rowCounts(victim),
 *   });
 */
import type { DescService } from "@bufbuild/protobuf";
import type { GenService, GenServiceMethods } from "@bufbuild/protobuf/codegenv2";
import {
  CONTEXT_METADATA_KEY,
  REQUEST_ID_METADATA_KEY,
  createContextSigner,
  generateInternalKeyPair,
  type InternalKeyPair,
} from "./internal-auth";
import type { SignedContext } from "./context";
import { newTenant, type Tenant } from "./testing-contexts";
import { editToken, metadataOf, rawUnaryCall, type RawOutcome } from "./testing-calls";

/** One method probed, with the request it is sent (built when the test runs, after beforeAll). */
export interface TrustBoundaryCall<T extends GenServiceMethods> {
  method: keyof T & string;
  request: () => Record<string, unknown>;
}

export interface TrustBoundaryOptions<T extends GenServiceMethods> {
  /** The service under test (the handle of startServiceUnderTest), available once beforeAll has run. */
  under: () => { address: string; callerKeys: InternalKeyPair; name?: string };
  /** Its name, the audience its callers sign for; defaults to the handle's name. */
  audience?: string;
  /** The organization and mode the calls are about (the victim); a fresh test-mode one when omitted. */
  tenant?: () => Tenant;
  /** The methods probed: the tenant's reads and writes. */
  calls: readonly TrustBoundaryCall<T>[];
  /** What a refused call must leave as it was, e.g. the tenant's row counts in each table. */
  snapshot?: () => Promise<unknown>;
}

export function describeTrustBoundary<T extends GenServiceMethods>(
  service: GenService<T>,
  o: TrustBoundaryOptions<T>,
): void {
  const desc = service as unknown as DescService;
  const audience = () => o.audience ?? o.under().name ?? "";
  const pathOf = (local: string) => {
    const m = desc.methods.find((x) => x.localName === local);
    if (!m) throw new Error(`${desc.typeName} has no method ${local}`);
    return `/${desc.typeName}/${m.name}`;
  };
  let fallback: Tenant | undefined;
  const victim = () => o.tenant?.() ?? (fallback ??= newTenant());
  const claims = (t: Tenant): SignedContext => ({
    organizationId: t.organizationId,
    livemode: t.livemode,
    keyId: "key_trust",
    credentialKind: "secret",
    plan: { planId: "scale", subscriptionStatus: "active" },
  });
  const token = (t: Tenant, method: string, privateKey = o.under().callerKeys.privateKey) =>
    createContextSigner({ issuer: "gateway", privateKey }).sign(claims(t), {
      audience: audience(),
      method: pathOf(method),
      deadline: Date.now() + 5000,
    });
  const withToken = (t: string) =>
    metadataOf([
      [CONTEXT_METADATA_KEY, t],
      [REQUEST_ID_METADATA_KEY, "req_trust"],
    ]);
  const call = (c: TrustBoundaryCall<T>, md: ReturnType<typeof metadataOf>): Promise<RawOutcome<unknown>> =>
    rawUnaryCall(o.under().address, service, c.method, c.request() as never, md) as Promise<
      RawOutcome<unknown>
    >;

  /** Sends each call with the metadata made for it; every one must be refused UNAUTHENTICATED, touching nothing. */
  async function refusedAll(metadata: (c: TrustBoundaryCall<T>) => ReturnType<typeof metadataOf>) {
    const before = await o.snapshot?.();
    const outcomes: Array<[string, string]> = [];
    for (const c of o.calls) {
      const r = await call(c, metadata(c));
      outcomes.push([c.method, r.ok ? "answered" : r.status]);
    }
    expect(outcomes).toEqual(o.calls.map((c) => [c.method, "UNAUTHENTICATED"]));
    if (o.snapshot) expect(await o.snapshot()).toEqual(before);
  }

  describe(`a direct call to ${desc.typeName}`, () => {
    it("with a made-up context and no proof is refused and touches nothing", async () => {
      const t = victim();
      await refusedAll(() =>
        metadataOf([
          ["x-request-id", "req_forged"],
          ["x-dpp-organization-id", t.organizationId],
          ["x-dpp-livemode", String(t.livemode)],
          ["x-dpp-key-id", "key_forged"],
          ["x-dpp-credential-kind", "secret"],
          ["x-dpp-plan-id", "scale"],
        ]),
      );
    });

    it("with a genuine token for another organization rewritten to this one is refused and touches nothing", async () => {
      const t = victim();
      const attacker = newTenant(t.livemode);
      await refusedAll((c) =>
        withToken(
          editToken(token(attacker, c.method), (x) => {
            x.ctx.organization_id = t.organizationId;
          }),
        ),
      );
    });

    it("with a genuine token rewritten to the other mode is refused and touches nothing", async () => {
      const t = victim();
      const other = { ...t, livemode: !t.livemode };
      await refusedAll((c) =>
        withToken(
          editToken(token(other, c.method), (x) => {
            x.ctx.livemode = t.livemode;
          }),
        ),
      );
    });

    it("with a token signed by a key the service does not trust is refused and touches nothing", async () => {
      const impostor = generateInternalKeyPair().privateKey;
      await refusedAll((c) => withToken(token(victim(), c.method, impostor)));
    });

    // A token names its method: one made for another method of the service is no proof for this one.
    if (desc.methods.length > 1)
      it("with a genuine token made for another method is refused and touches nothing", async () => {
        const other = (c: TrustBoundaryCall<T>) =>
          desc.methods.find((m) => m.localName !== c.method)!.localName;
        await refusedAll((c) => withToken(token(victim(), other(c))));
      });

    it("with a genuine token for the tenant itself is answered", async () => {
      const outcomes: Array<[string, string]> = [];
      for (const c of o.calls) {
        const r = await call(c, withToken(token(victim(), c.method)));
        outcomes.push([c.method, r.ok ? "answered" : `${r.status}: ${r.error.details}`]);
      }
      expect(outcomes).toEqual(o.calls.map((c) => [c.method, "answered"]));
    });
  });
}
