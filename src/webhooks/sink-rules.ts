import { lookup as dnsLookup, type LookupAddress } from "node:dns";
import { BlockList, isIP, type LookupFunction } from "node:net";
import { isPrivateAddress } from "../auth/login/private-address.js";

/** What the server lets a webhook sink be (docs/events.md "SSRF rules"). */
export interface SinkRules {
  /** Sinks on loopback (127.0.0.0/8, ::1, localhost), over http too: development and tests. */
  allowLoopback: boolean;
  /** Sinks on private, link-local and other reserved addresses (a sink inside the network). */
  allowPrivateAddresses: boolean;
}

/** The longest sink URL accepted. */
export const maxSinkLength = 2048;

const loopback = new BlockList();
loopback.addSubnet("127.0.0.0", 8, "ipv4");
loopback.addAddress("::1", "ipv6");

// "This host" (RFC 1122): a connection to 0.0.0.0 or :: reaches the server's own loopback, so
// no setting lets a sink be one (issue 35 N8: with private addresses allowed, it scanned the
// server's own ports). The IPv4-mapped forms are checked against the IPv4 rule.
const unspecified = new BlockList();
unspecified.addSubnet("0.0.0.0", 8, "ipv4");
unspecified.addAddress("::", "ipv6");

/** Whether an IP literal (with or without brackets, IPv4-mapped too) is unspecified. */
function isUnspecifiedAddress(address: string): boolean {
  const ip = address.replace(/^\[(.*)\]$/, "$1");
  const family = isIP(ip);
  if (family === 0) return false;
  return unspecified.check(ip, family === 4 ? "ipv4" : "ipv6");
}

/** Whether an IP literal (IPv6 with or without brackets, IPv4-mapped too) is loopback. */
function isLoopbackAddress(address: string): boolean {
  const ip = address.replace(/^\[(.*)\]$/, "$1");
  const family = isIP(ip);
  if (family === 4) return loopback.check(ip, "ipv4");
  if (family !== 6) return false;
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip)?.[1];
  return mapped ? loopback.check(mapped, "ipv4") : loopback.check(ip, "ipv6");
}

/** Whether a sink host named as loopback: localhost, *.localhost or a loopback literal. */
function isLoopbackHost(hostname: string): boolean {
  // A name's trailing dot (an absolute name) resolves the same: "localhost." is localhost.
  const host = hostname.replace(/\.$/, "");
  return host === "localhost" || host.endsWith(".localhost") || isLoopbackAddress(host);
}

/**
 * Whether the server may connect to `address` for a sink: never an unspecified address
 * (0.0.0.0/8, ::: the server itself), loopback only when allowed, private and reserved
 * ranges (the OIDC issuers' list: RFC 1918, link-local and the cloud metadata address,
 * CGNAT, ULA...) only when allowed, any public address.
 */
export function isAllowedSinkAddress(address: string, rules: SinkRules): boolean {
  if (isUnspecifiedAddress(address)) return false;
  if (isLoopbackAddress(address)) return rules.allowLoopback;
  if (isPrivateAddress(address)) return rules.allowPrivateAddresses;
  return true;
}

/**
 * Why `sink` is refused as it is written, or undefined: an https URL (http only on a loopback
 * host when loopback sinks are allowed), no credentials or fragment, and a host that is not
 * a refused address literal. A name is checked again on the addresses it resolves to at each
 * delivery (sinkLookup).
 */
export function sinkProblem(sink: string, rules: SinkRules): string | undefined {
  if (sink.length > maxSinkLength) return `must be at most ${maxSinkLength} characters`;
  let url: URL;
  try {
    url = new URL(sink);
  } catch {
    return "must be an absolute https URL";
  }
  if (url.protocol !== "https:" && url.protocol !== "http:") {
    return "must be an https URL";
  }
  if (url.username !== "" || url.password !== "") return "must not carry credentials";
  if (url.hash !== "") return "must not have a fragment";
  const host = url.hostname;
  if (isUnspecifiedAddress(host)) {
    return "must not be an unspecified address (0.0.0.0/8, ::): it reaches the server itself";
  }
  if (isLoopbackHost(host)) {
    return rules.allowLoopback
      ? undefined
      : "must not be a loopback address (the server allows them only with GATEHOUSE_WEBHOOK_ALLOW_HTTP_LOOPBACK)";
  }
  if (url.protocol === "http:") {
    return "must be an https URL (http only on a loopback host, with GATEHOUSE_WEBHOOK_ALLOW_HTTP_LOOPBACK)";
  }
  if (isIP(host.replace(/^\[(.*)\]$/, "$1")) && !isAllowedSinkAddress(host, rules)) {
    return "must not be a private, link-local or reserved address (the server allows them only with GATEHOUSE_WEBHOOK_ALLOW_PRIVATE_ADDRESSES)";
  }
  return undefined;
}

/** The error of a sink whose name resolves to a refused address. */
export class RefusedSinkAddressError extends Error {
  override name = "RefusedSinkAddressError";
  readonly code = "EREFUSEDSINKADDRESS";
  constructor(host: string) {
    super(`${host} resolves to an address sinks may not have`);
  }
}

/**
 * The DNS lookup of a delivery: every address the name resolves to must be allowed, and the
 * connection goes to one of those very addresses (pinned), so a name that resolves to a
 * public address when checked and to a private one when connecting is refused.
 */
export function sinkLookup(rules: SinkRules): LookupFunction {
  return (hostname, options, callback) => {
    dnsLookup(hostname, { ...options, all: true }, (err, addresses: LookupAddress[]) => {
      if (err) return callback(err, "", 0);
      if (
        addresses.length === 0 ||
        addresses.some((a) => !isAllowedSinkAddress(a.address, rules))
      ) {
        return callback(new RefusedSinkAddressError(hostname), "", 0);
      }
      if (options.all) {
        return (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, addresses);
      }
      const first = addresses[0]!;
      return callback(null, first.address, first.family);
    });
  };
}
