import { addressAllowed, classifyAddress } from "./address";

it("classifies loopback, private, link-local, metadata and public addresses", () => {
  expect(classifyAddress("127.0.0.1")).toBe("loopback");
  expect(classifyAddress("127.8.9.10")).toBe("loopback");
  expect(classifyAddress("::1")).toBe("loopback");
  expect(classifyAddress("::ffff:127.0.0.1")).toBe("loopback");
  for (const a of [
    "10.1.2.3",
    "172.16.0.1",
    "172.31.255.255",
    "192.168.1.1",
    "169.254.169.254",
    "100.100.100.200",
    "0.0.0.0",
    "fd00:ec2::254",
    "fe80::1",
    "::",
    "::ffff:10.0.0.1",
    "::ffff:169.254.169.254",
    "224.0.0.1",
    "not-an-address",
  ])
    expect([a, classifyAddress(a)]).toEqual([a, "private"]);
  for (const a of ["93.184.215.14", "8.8.8.8", "172.32.0.1", "2606:4700::1111"])
    expect([a, classifyAddress(a)]).toEqual([a, "public"]);
});

it("allows loopback in test mode only, and private addresses in neither", () => {
  expect(addressAllowed("127.0.0.1", false)).toBe(true);
  expect(addressAllowed("127.0.0.1", true)).toBe(false);
  expect(addressAllowed("10.0.0.1", false)).toBe(false);
  expect(addressAllowed("169.254.169.254", false)).toBe(false);
  expect(addressAllowed("8.8.8.8", true)).toBe(true);
});
