import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config.js";
import { type OidcIssuer, startOidcIssuer } from "../helpers/oidc-issuer.js";
import { freePort, useTestServer } from "../helpers/test-server.js";

// Discovery tells the truth: https with TLS on, and the STS endpoint where it is served.

describe("the default base URL", () => {
  it("is https when TLS is on, http otherwise", () => {
    const tls = loadConfig(["--tls-cert", "c.pem", "--tls-key", "k.pem", "--port", "8443"], {});
    expect(tls.baseUrl).toBe("https://localhost:8443");
    expect(tls.authUrl).toBe("https://localhost:8443");
    expect(loadConfig(["--port", "8080"], {}).baseUrl).toBe("http://localhost:8080");
  });
});

describe("an auth URL with a path", () => {
  let users: OidcIssuer;
  let port: number;
  let url: string;
  beforeAll(async () => {
    users = await startOidcIssuer({ alg: "ES256" });
    port = await freePort();
    url = `http://127.0.0.1:${port}`;
  });
  afterAll(async () => {
    await users?.stop();
  });
  // After the issuer's hooks: it starts once the issuer runs, and closes before it stops.
  const ts = useTestServer(() => ({
    GATEHOUSE_PORT: String(port),
    GATEHOUSE_BASE_URL: `http://127.0.0.1:${port}`,
    GATEHOUSE_AUTH_URL: `http://127.0.0.1:${port}/auth`,
    GATEHOUSE_ALLOW_INSECURE_LOOPBACK_ISSUERS: "true",
    GATEHOUSE_TRUSTED_USER_ISSUERS: users.url,
  }));

  it("advertises the STS endpoint under it, and serves it there (and at the root)", async () => {
    const disc = (await (await fetch(`${url}/auth/.well-known/openid-configuration`)).json()) as {
      issuer: string;
      sts_endpoint: string;
    };
    expect(disc.issuer).toBe(`${url}/auth`);
    expect(disc.sts_endpoint).toBe(`${url}/auth/sts/exchange`);
    for (const sts of [disc.sts_endpoint, `${url}/sts/exchange`]) {
      const oidc = await users.issue({ sub: "path-person", aud: ts.config.baseUrl });
      const res = await fetch(`${sts}?aud=${encodeURIComponent(ts.config.baseUrl)}`, {
        headers: { authorization: `Bearer ${oidc}` },
      });
      expect(res.status, sts).toBe(200);
      expect(((await res.json()) as { token: string }).token).toMatch(/^ey/);
    }
  });
});
