/**
 * Prints a fresh Ed25519 key pair for one calling service, as environment lines:
 *
 *   node --import tsx services/kit/src/internal-auth-keygen.ts [caller name, default gateway]
 *
 * INTERNAL_AUTH_PRIVATE_KEY goes to the caller only (a Secret); the
 * INTERNAL_AUTH_TRUSTED_KEYS entry goes to every service the caller may call.
 */
import {
  formatTrustedKeys,
  generateInternalKeyPair,
  isServiceName,
  type InternalKeyPair,
} from "./internal-auth";

export function keygenLines(caller: string, pair: InternalKeyPair = generateInternalKeyPair()): string {
  if (!isServiceName(caller)) throw new Error(`invalid caller name ${JSON.stringify(caller)}`);
  return [
    `# Internal authentication key pair of the caller "${caller}".`,
    `# The caller's secret: give it to ${caller} only (a Secret, or a file named by the variable).`,
    `INTERNAL_AUTH_PRIVATE_KEY=${pair.privateKey}`,
    `# Its public key: add this entry (comma-separated) to INTERNAL_AUTH_TRUSTED_KEYS of every service ${caller} calls.`,
    `INTERNAL_AUTH_TRUSTED_KEYS=${formatTrustedKeys({ [caller]: [pair.publicKey] })}`,
    "",
  ].join("\n");
}

if (require.main === module) {
  try {
    process.stdout.write(keygenLines(process.argv[2] ?? "gateway"));
  } catch (err) {
    process.stderr.write(`${(err as Error).message}\nusage: internal-auth-keygen.ts [caller name]\n`);
    process.exit(2);
  }
}
