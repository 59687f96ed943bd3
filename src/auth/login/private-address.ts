import { lookup as dnsLookup, type LookupAddress } from "node:dns";
import { BlockList, isIP, type LookupFunction } from "node:net";

// Addresses an organization's provider may not make the server call: loopback, private
// networks, link-local (cloud metadata at 169.254.169.254), carrier-grade NAT, multicast,
// reserved and documentation ranges, and their IPv6 counterparts.
const blocked = new BlockList();
for (const [net, prefix] of [
  ["0.0.0.0", 8],
  ["10.0.0.0", 8],
  ["100.64.0.0", 10],
  ["127.0.0.0", 8],
  ["169.254.0.0", 16],
  ["172.16.0.0", 12],
  ["192.0.0.0", 24],
  ["192.0.2.0", 24],
  ["192.168.0.0", 16],
  ["198.18.0.0", 15],
  ["198.51.100.0", 24],
  ["203.0.113.0", 24],
  ["224.0.0.0", 3], // multicast, reserved and broadcast: 224.0.0.0 to 255.255.255.255
] as const) {
  blocked.addSubnet(net, prefix, "ipv4");
}
for (const [net, prefix] of [
  ["::", 128],
  ["::1", 128],
  ["64:ff9b::", 96], // NAT64: reaches IPv4 addresses, private ones included
  ["100::", 64],
  ["2001:db8::", 32],
  ["fc00::", 7],
  ["fe80::", 10],
  ["ff00::", 8],
] as const) {
  blocked.addSubnet(net, prefix, "ipv6");
}

/** Whether `address` (an IP literal, IPv6 with or without brackets) is private or reserved. */
export function isPrivateAddress(address: string): boolean {
  const ip = address.replace(/^\[(.*)\]$/, "$1");
  const family = isIP(ip);
  if (family === 4) return blocked.check(ip, "ipv4");
  if (family !== 6) return false;
  // An IPv4-mapped (::ffff:a.b.c.d) or -compatible address reaches that IPv4 address.
  const mapped = /^::(?:ffff:)?(\d+\.\d+\.\d+\.\d+)$/i.exec(ip)?.[1];
  if (mapped) return blocked.check(mapped, "ipv4");
  const hex = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/i.exec(ip);
  if (hex) {
    const n = (Number.parseInt(hex[1]!, 16) << 16) | Number.parseInt(hex[2]!, 16);
    return blocked.check([n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join("."), "ipv4");
  }
  return blocked.check(ip, "ipv6");
}

/** The error of a connection refused because its host is, or resolves to, a private address. */
export class PrivateAddressError extends Error {
  override name = "PrivateAddressError";
  readonly code = "EPRIVATEADDRESS";
  constructor(readonly host: string) {
    super(`${host} is a private or loopback address`);
  }
}

/**
 * A DNS lookup for http.request that refuses a host any of whose addresses is private: the
 * check is made on the very addresses the connection then uses, so a name that resolves to a
 * public address when checked and to a private one when connecting (DNS rebinding) is refused.
 */
export const publicOnlyLookup: LookupFunction = (hostname, options, callback) => {
  dnsLookup(hostname, { ...options, all: true }, (err, addresses: LookupAddress[]) => {
    if (err) return callback(err, "", 0);
    if (addresses.length === 0 || addresses.some((a) => isPrivateAddress(a.address))) {
      return callback(new PrivateAddressError(hostname), "", 0);
    }
    if (options.all) {
      return (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, addresses);
    }
    const first = addresses[0]!;
    return callback(null, first.address, first.family);
  });
};
