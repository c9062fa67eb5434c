/**
 * Calls made by hand, as anyone on the network could make them: one unary call with exactly the metadata given,
 * and context tokens edited or signed by hand. The trust-boundary tests are made of these (testing.ts hands them
 * on).
 */
import { createPrivateKey, sign } from "node:crypto";
import * as grpc from "@grpc/grpc-js";
import type { DescService, MessageInitShape, MessageShape } from "@bufbuild/protobuf";
import type { GenService, GenServiceMethods } from "@bufbuild/protobuf/codegenv2";
import { serviceDefinition } from "./grpc";
import { publicKeyOf } from "./internal-auth";

/** The outcome of a call made by hand: the answer, or the gRPC status it was refused with. */
export type RawOutcome<R> =
  { ok: true; response: R } | { ok: false; status: keyof typeof grpc.status; error: grpc.ServiceError };

/**
 * Calls one unary method with exactly the metadata given, as anyone on the network could (no kit client,
 * no signing): for tests of the trust boundary.
 */
export function rawUnaryCall<T extends GenServiceMethods, K extends keyof T & string>(
  address: string,
  service: GenService<T>,
  method: K,
  request: MessageInitShape<T[K]["input"]>,
  metadata: grpc.Metadata,
): Promise<RawOutcome<MessageShape<T[K]["output"]>>> {
  const desc = service as unknown as DescService;
  const Ctor = grpc.makeGenericClientConstructor(serviceDefinition(desc), desc.typeName);
  const client = new Ctor(address, grpc.credentials.createInsecure()) as unknown as Record<
    string,
    (
      req: unknown,
      md: grpc.Metadata,
      o: grpc.CallOptions,
      cb: (e: grpc.ServiceError | null, r: unknown) => void,
    ) => void
  > & { close(): void };
  return new Promise((resolve) =>
    client[method]!(request, metadata, { deadline: Date.now() + 5000 }, (e, r) => {
      client.close();
      resolve(
        e
          ? { ok: false, status: grpc.status[e.code] as keyof typeof grpc.status, error: e }
          : { ok: true, response: r as MessageShape<T[K]["output"]> },
      );
    }),
  );
}

/** Metadata with the given entries (several values per key allowed). */
export function metadataOf(entries: Array<[string, string]>): grpc.Metadata {
  const md = new grpc.Metadata();
  for (const [k, v] of entries) md.add(k, v);
  return md;
}

/** A context token whose claims were edited in place, its signature kept (what a forger can do). */
export function editToken(token: string, change: (claims: Record<string, any>) => void): string {
  const [payload, signature] = token.split(".");
  const claims = JSON.parse(Buffer.from(payload!, "base64url").toString()) as Record<string, any>;
  change(claims);
  return `${Buffer.from(JSON.stringify(claims)).toString("base64url")}.${signature}`;
}

/**
 * A context token made by hand in the documented format (internal-auth.ts): any claims, signed with a caller's
 * private key (base64url Ed25519 seed). What a caller of another version sends.
 */
export function signedToken(claims: Record<string, unknown>, privateKey: string): string {
  const key = createPrivateKey({
    key: { kty: "OKP", crv: "Ed25519", d: privateKey, x: publicKeyOf(privateKey) },
    format: "jwk",
  });
  const payload = Buffer.from(JSON.stringify(claims), "utf8");
  return `${payload.toString("base64url")}.${sign(null, payload, key).toString("base64url")}`;
}
