import * as client from "openid-client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { personUid } from "../../src/auth/login/person.js";
import {
  confirmationPage,
  decideUserCode,
  pollOnce,
  postForm,
  startDeviceAuthorization,
} from "../helpers/device-sign-in.js";
import { restCall } from "../helpers/rest-client.js";
import { startTestIdp, type TestIdp } from "../helpers/test-idp.js";
import { backends, freePort, startTestServer, type TestServer } from "../helpers/test-server.js";

// The OAuth device authorization grant (RFC 8628) end to end: openid-client's device-flow
// client against Gatehouse's authorization server, a person approving over HTTP through the
// real OpenID Provider (oidc-provider). On PostgreSQL, through two replicas: the client talks
// to one, the person to the other. The clock is the servers' own, moved by the tests.

const deviceGrant = "urn:ietf:params:oauth:grant-type:device_code";

describe.each(backends)("the device flow on %s", (backend) => {
  let idp: TestIdp;
  // The server the person signs in at (the auth URL), and the one the device talks to.
  let web: TestServer;
  let device: TestServer;
  let offsetMs = 0;
  let frozen: number | undefined;
  const now = () => frozen ?? Date.now() + offsetMs;

  beforeAll(async () => {
    const port = await freePort();
    idp = await startTestIdp({
      redirectUri: `http://127.0.0.1:${port}/oauth/callback`,
      people: {
        alice: { name: "Alice Example", email: "alice@example.com", email_verified: true },
      },
    });
    const env = {
      GATEHOUSE_LOGIN_ISSUER: idp.issuer,
      GATEHOUSE_LOGIN_CLIENT_ID: idp.clientId,
      GATEHOUSE_LOGIN_CLIENT_SECRET: idp.clientSecret,
      GATEHOUSE_ALLOW_INSECURE_LOOPBACK_ISSUERS: "true",
      GATEHOUSE_DEVICE_CODE_INTERVAL: "1s",
    };
    web = await startTestServer(env, { port, backend, now });
    device =
      backend === "postgres"
        ? await startTestServer(
            {
              ...env,
              GATEHOUSE_DATABASE_URL: web.config.databaseUrl,
              GATEHOUSE_BASE_URL: web.url,
            },
            { now },
          )
        : web;
  });

  afterAll(async () => {
    if (device !== web) await device?.close();
    await web?.close();
    await idp?.close();
  });

  // openid-client with the discovery document's endpoints at the device's replica (as behind a
  // load balancer that sent it there): every request of the client goes to that replica.
  const oidcClient = async () => {
    const doc = (await (
      await fetch(`${device.url}/.well-known/openid-configuration`)
    ).json()) as client.ServerMetadata;
    const at = (u: unknown) => (typeof u === "string" ? u.replace(web.url, device.url) : u);
    const metadata = Object.fromEntries(
      Object.entries(doc).map(([k, v]) => [k, k === "issuer" ? v : at(v)]),
    ) as client.ServerMetadata;
    const config = new client.Configuration(metadata, "gatehouse-cli", undefined, client.None());
    client.allowInsecureRequests(config);
    return config;
  };

  it("advertises the device authorization endpoint and its grant", async () => {
    const doc = (await (await fetch(`${device.url}/.well-known/openid-configuration`)).json()) as {
      device_authorization_endpoint: string;
      grant_types_supported: string[];
    };
    expect(doc.device_authorization_endpoint).toBe(`${web.url}/oauth/device_authorization`);
    expect(doc.grant_types_supported).toContain(deviceGrant);
  });

  it("signs a person in through openid-client's device flow once they approve", async () => {
    const config = await oidcClient();
    const started = await client.initiateDeviceAuthorization(config, {});
    expect(started.user_code).toMatch(/^[BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4}$/);
    expect(started.verification_uri).toBe(`${web.url}/oauth/device`);
    expect(started.verification_uri_complete).toBe(
      `${web.url}/oauth/device?user_code=${started.user_code}`,
    );
    expect(started.expires_in).toBe(600);
    expect(started.interval).toBe(1);
    const polling = client.pollDeviceAuthorizationGrant(config, started);
    // Typed as people type: lower case, a space instead of the dash.
    const typed = started.user_code.toLowerCase().replace("-", " ");
    const decided = await decideUserCode(web.url, typed, "alice", "approve");
    expect(decided.status).toBe(200);
    expect(decided.html).toContain("Device signed in");
    const tokens = await polling;
    expect(tokens.token_type.toLowerCase()).toBe("bearer");
    expect(tokens.refresh_token).toMatch(/^gatehouse_rt_/);
    const me = await restCall(device.url, "GET", "/iam/v2beta1/caller", undefined, {
      authorization: `Bearer ${tokens.access_token}`,
    });
    expect(me.status).toBe(200);
    expect(me.json.identity.uid).toBe(personUid(idp.issuer, "alice"));
    // The redemption is in the audit trail, by and about the person.
    const trail = await web.store.listEvents({
      childrenOf: personUid(idp.issuer, "alice"),
      filters: { type: "dev.gatehouse.auth.device_code.redeemed.v1" },
      order: { field: "create_time", desc: false },
      skip: 0,
      limit: 10,
    });
    expect(trail.items.map((e) => e.actorUid)).toEqual([personUid(idp.issuer, "alice")]);
    // Its refresh token is a session's like any other: rotated at the token endpoint.
    const refreshed = await client.refreshTokenGrant(config, tokens.refresh_token as string);
    expect(refreshed.access_token).toBeTruthy();
    // The code is spent: polled again, and approved again, it grants nothing.
    const again = await pollOnce(device.url, started.device_code);
    expect(again).toMatchObject({ status: 400, json: { error: "invalid_grant" } });
    const entry = await fetch(`${web.url}/oauth/device`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ user_code: started.user_code }),
      redirect: "manual",
    });
    expect(entry.status).toBe(400);
  });

  it("answers access_denied to the client when the person denies the code", async () => {
    const config = await oidcClient();
    const started = await client.initiateDeviceAuthorization(config, {});
    const polling = client.pollDeviceAuthorizationGrant(config, started).then(
      () => "granted",
      (err: unknown) => (err as { error?: string }).error,
    );
    const decided = await decideUserCode(web.url, started.user_code, "alice", "deny");
    expect(decided.html).toContain("Sign-in denied");
    expect(await polling).toBe("access_denied");
  });

  it("decides a code once: a second confirmation page's Approve is refused", async () => {
    const started = await startDeviceAuthorization(device.url);
    const first = await confirmationPage(web.url, started.user_code, "alice");
    const second = await confirmationPage(web.url, started.user_code, "alice");
    const press = (html: string, decision: string) =>
      fetch(`${web.url}/oauth/device/confirm`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({
          ticket: /name="ticket" value="([^"]+)"/.exec(html)?.[1] ?? "",
          decision,
        }),
      });
    expect((await press(first, "deny")).status).toBe(200);
    expect((await press(second, "approve")).status).toBe(400);
    expect((await pollOnce(device.url, started.device_code)).json.error).toBe("access_denied");
    // A forged ticket is no confirmation.
    expect(
      (await press('name="ticket" value="AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"', "approve")).status,
    ).toBe(400);
  });

  it("answers slow_down to a client polling faster than the interval, adding 5 s each time", async () => {
    const started = await startDeviceAuthorization(device.url);
    frozen = Date.now() + offsetMs;
    try {
      const poll = () => pollOnce(device.url, started.device_code).then((a) => a.json.error);
      expect(await poll()).toBe("authorization_pending");
      // Again at the same instant: too soon by the 1 s interval, which becomes 6 s.
      expect(await poll()).toBe("slow_down");
      frozen += 5000;
      // 5 s after the last poll: within the 6 s interval, which becomes 11 s.
      expect(await poll()).toBe("slow_down");
      frozen += 10_000;
      expect(await poll()).toBe("slow_down");
      frozen += 16_000;
      expect(await poll()).toBe("authorization_pending");
    } finally {
      offsetMs = (frozen as number) - Date.now();
      frozen = undefined;
    }
  });

  it("refuses other clients, grants and malformed requests in RFC 6749's words", async () => {
    const other = await postForm(`${device.url}/oauth/device_authorization`, {
      client_id: "gatehouse-console",
    });
    expect(other).toMatchObject({ status: 401, json: { error: "invalid_client" } });
    const started = await startDeviceAuthorization(device.url);
    const wrongClient = await postForm(`${device.url}/oauth/token`, {
      grant_type: deviceGrant,
      device_code: started.device_code,
      client_id: "gatehouse-console",
    });
    expect(wrongClient).toMatchObject({ status: 400, json: { error: "invalid_grant" } });
    const missing = await postForm(`${device.url}/oauth/token`, {
      grant_type: deviceGrant,
      client_id: "gatehouse-cli",
    });
    expect(missing).toMatchObject({ status: 400, json: { error: "invalid_request" } });
    const unknown = await pollOnce(device.url, "not-a-device-code");
    expect(unknown).toMatchObject({ status: 400, json: { error: "invalid_grant" } });
  });

  it("expires a code after ten minutes: expired_token, and the code is no longer accepted", async () => {
    const started = await startDeviceAuthorization(device.url);
    offsetMs += 600_000;
    expect((await pollOnce(device.url, started.device_code)).json.error).toBe("expired_token");
    const entry = await fetch(`${web.url}/oauth/device`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ user_code: started.user_code }),
      redirect: "manual",
    });
    expect(entry.status).toBe(400);
    expect(await entry.text()).toContain("unknown, expired or already used");
  });

  it("limits the codes one address may enter a minute, right or wrong", async () => {
    offsetMs += 120_000; // a fresh minute for this address's bucket
    const started = await startDeviceAuthorization(device.url);
    const enter = (code: string) =>
      fetch(`${web.url}/oauth/device`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({ user_code: code }),
        redirect: "manual",
      });
    const statuses: number[] = [];
    for (let i = 0; i < 10; i++) statuses.push((await enter("BBBB-BBBB")).status);
    expect(statuses).toEqual(new Array(10).fill(400));
    const right = await enter(started.user_code);
    expect(right.status).toBe(429);
    expect(right.headers.get("retry-after")).toMatch(/^\d+$/);
    // A minute on, the right code is taken.
    offsetMs += 60_000;
    expect((await enter(started.user_code)).status).toBe(302);
  });
});
