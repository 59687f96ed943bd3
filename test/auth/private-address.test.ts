import type { LookupAddress } from "node:dns";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { describe, expect, it } from "vitest";
import {
  isPrivateAddress,
  PrivateAddressError,
  publicOnlyLookup,
} from "../../src/auth/login/private-address.js";
import { createUpstreamFetch } from "../../src/auth/login/upstream-fetch.js";

// Which addresses an organization's identity provider may not make the server call, and the
// fetch that enforces it on the addresses actually connected to.

describe("isPrivateAddress", () => {
  it.each([
    "127.0.0.1",
    "127.255.0.1",
    "10.0.0.1",
    "172.16.5.4",
    "172.31.255.255",
    "192.168.1.1",
    "169.254.169.254",
    "100.64.0.1",
    "0.0.0.0",
    "224.0.0.1",
    "255.255.255.255",
    "::1",
    "[::1]",
    "::",
    "fc00::1",
    "fd12:3456::1",
    "fe80::1",
    "ff02::1",
    "::ffff:127.0.0.1",
    "::ffff:7f00:1",
    "::ffff:a9fe:a9fe",
    "64:ff9b::a00:1",
  ])("%s is private", (address) => {
    expect(isPrivateAddress(address)).toBe(true);
  });

  it.each(["8.8.8.8", "1.1.1.1", "172.32.0.1", "2606:4700::1111", "::ffff:8.8.8.8", "idp.example"])(
    "%s is not",
    (address) => {
      expect(isPrivateAddress(address)).toBe(false);
    },
  );
});

describe("the public-only fetch", () => {
  it("a name that resolves to a loopback address is refused by the lookup itself", async () => {
    for (const all of [false, true]) {
      const err = await new Promise<unknown>((resolve) =>
        publicOnlyLookup("localhost", { all }, (e: unknown, _a?: string | LookupAddress[]) =>
          resolve(e),
        ),
      );
      expect(err).toBeInstanceOf(PrivateAddressError);
    }
  });

  it("refuses a private address before connecting, and reads a public-only server's answer otherwise", async () => {
    let hits = 0;
    const server = createServer((_req, res) => {
      hits++;
      res.writeHead(200, { "content-type": "application/json" }).end('{"ok":true}');
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/x`;
    try {
      await expect(createUpstreamFetch({ publicOnly: true })(url)).rejects.toBeInstanceOf(
        PrivateAddressError,
      );
      expect(hits).toBe(0);
      const res = await createUpstreamFetch({ publicOnly: false })(url);
      expect(await res.json()).toEqual({ ok: true });
      expect(hits).toBe(1);
    } finally {
      server.close();
    }
  });
});
