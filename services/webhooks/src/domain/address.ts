/**
 * Which network addresses a delivery may connect to. A webhook URL names a host that anyone can point anywhere,
 * so the address is checked when the URL is given and again at every delivery, on the address the connection is
 * then made to (delivery/http.ts pins it): loopback, private, carrier-grade NAT, link-local (the cloud metadata
 * services among them), multicast, reserved and documentation ranges are never reached. Test mode alone may
 * reach loopback, for a receiver on the developer's machine (docs/decisions/0055-webhooks.md).
 */
import { BlockList, isIP } from "node:net";

const blocked = new BlockList();
const loopback = new BlockList();
for (const [net, prefix] of [
  ["0.0.0.0", 8],
  ["10.0.0.0", 8],
  ["100.64.0.0", 10],
  ["169.254.0.0", 16],
  ["172.16.0.0", 12],
  ["192.0.0.0", 24],
  ["192.0.2.0", 24],
  ["192.88.99.0", 24],
  ["192.168.0.0", 16],
  ["198.18.0.0", 15],
  ["198.51.100.0", 24],
  ["203.0.113.0", 24],
  ["224.0.0.0", 4],
  ["240.0.0.0", 4],
] as const)
  blocked.addSubnet(net, prefix, "ipv4");
for (const [net, prefix] of [
  ["::", 128],
  ["64:ff9b::", 96],
  ["64:ff9b:1::", 48],
  ["100::", 64],
  ["2001:db8::", 32],
  ["fc00::", 7],
  ["fe80::", 10],
  ["fec0::", 10],
  ["ff00::", 8],
] as const)
  blocked.addSubnet(net, prefix, "ipv6");
loopback.addSubnet("127.0.0.0", 8, "ipv4");
loopback.addAddress("::1", "ipv6");

/** "loopback", "private" (every other refused range) or "public". */
export type AddressClass = "loopback" | "private" | "public";

export function classifyAddress(address: string): AddressClass {
  let a = address;
  // IPv4-mapped and -compatible IPv6 addresses are the IPv4 address they carry.
  const mapped = /^(?:::ffff:|::)(\d+\.\d+\.\d+\.\d+)$/i.exec(a);
  if (mapped) a = mapped[1]!;
  const family = isIP(a);
  if (family === 0) return "private";
  const type = family === 4 ? "ipv4" : "ipv6";
  if (family === 6 && /^::ffff:/i.test(a)) return "private";
  if (loopback.check(a, type)) return "loopback";
  if (blocked.check(a, type)) return "private";
  return "public";
}

/** Whether a delivery in this mode may connect to the address. */
export function addressAllowed(address: string, livemode: boolean): boolean {
  const c = classifyAddress(address);
  return c === "public" || (c === "loopback" && !livemode);
}
