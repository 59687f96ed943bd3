import { isIPv6 } from "node:net";

/**
 * The client address of a connection (a socket, or an HTTP/2 session and its socket), as
 * the rate limits key it: an IPv4 address whole, an IPv6 address by its /64 (one host is
 * usually given a whole /64, and would otherwise get 2^64 buckets). "" when unknown.
 */
export function clientAddress(connection: object | undefined): string {
  const c = connection as
    | { remoteAddress?: string; socket?: { remoteAddress?: string } }
    | undefined;
  return addressKey(c?.remoteAddress ?? c?.socket?.remoteAddress ?? "");
}

/** An address as a limit's key: IPv4 (and IPv4-mapped IPv6) whole, IPv6 by its /64 prefix. */
export function addressKey(address: string): string {
  if (address.startsWith("::ffff:") && address.includes(".")) return address.slice(7);
  if (!isIPv6(address)) return address;
  const [head = "", tail = ""] = address.split("::");
  const left = head === "" ? [] : head.split(":");
  const right = tail === "" ? [] : tail.split(":");
  const groups = address.includes("::")
    ? [...left, ...new Array(8 - left.length - right.length).fill("0"), ...right]
    : left;
  return `${groups
    .slice(0, 4)
    .map((g) => Number.parseInt(g, 16).toString(16))
    .join(":")}::/64`;
}
