/**
 * Registry-audience tokens made from an API token by `/sts/exchange` (issue 35, N6): what
 * docker-credential-gatehouse hands a registry. The registry's token endpoint takes them;
 * every API call refuses them; they never turn back into API tokens. Connect and fetch
 * against a real server.
 */
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { decodeJwt } from "jose";
import { describe, expect, it } from "vitest";
import { CallerService } from "../../gen/gatehouse/iam/v2beta1/caller_pb.js";
import { SecurityTokenService } from "../../gen/gatehouse/sts/v1/sts_pb.js";
import { restCall } from "../helpers/rest-client.js";
import { useTestServer } from "../helpers/test-server.js";

const service = "registry.credential.test";
const gh = useTestServer({ GATEHOUSE_REGISTRY_AUDIENCE: service });

const transport = () => createConnectTransport({ baseUrl: gh.url, httpVersion: "1.1" });
const bearer = (token: string) => ({ headers: { authorization: `Bearer ${token}` } });

async function exchange(token: string, aud: string) {
  return createClient(SecurityTokenService, transport()).exchange({ aud }, bearer(token));
}

async function code(p: Promise<unknown>) {
  try {
    await p;
  } catch (err) {
    return ConnectError.from(err).code;
  }
  return undefined;
}

describe("registry credentials from an API token", () => {
  it("are short-lived registry-audience tokens that the token endpoint takes and the API refuses", async () => {
    const org = await gh.makeOrg("acme");
    const made = await restCall(
      gh.url,
      "POST",
      `/registry/v2beta1/repos/${org.uid}`,
      { name: "app" },
      org.owner.headers,
    );
    expect(made.status).toBe(200);
    const { token, expiry } = await exchange(org.owner.token, service);
    const claims = decodeJwt(token);
    expect(claims).toMatchObject({ sub: org.owner.uid, aud: service });
    expect(claims.exp! - claims.iat!).toBeLessThanOrEqual(900);
    expect(Number(expiry!.seconds)).toBe(claims.exp);
    // The API: UNAUTHENTICATED, on Connect and REST, for a read and for a delete.
    const caller = createClient(CallerService, transport());
    expect(await code(caller.getCaller({}, bearer(token)))).toBe(Code.Unauthenticated);
    const del = await restCall(gh.url, "DELETE", `/iam/v2beta1/groups/${org.uid}`, undefined, {
      authorization: `Bearer ${token}`,
    });
    expect(del.status).toBe(401);
    expect(
      (
        await restCall(
          gh.url,
          "GET",
          `/iam/v2beta1/groups/${org.uid}`,
          undefined,
          org.owner.headers,
        )
      ).status,
    ).toBe(200);
    // The registry's token endpoint: the owner's grants.
    const res = await fetch(
      `${gh.config.authUrl}/registry/token?service=${service}&scope=repository:acme/app:pull,push`,
      {
        headers: { authorization: `Basic ${Buffer.from(`gatehouse:${token}`).toString("base64")}` },
      },
    );
    expect(res.status).toBe(200);
    const access = decodeJwt(((await res.json()) as { token: string }).token).access;
    expect(access).toEqual([{ type: "repository", name: "acme/app", actions: ["pull", "push"] }]);
  });

  it("never become API tokens, nor longer-lived registry tokens", async () => {
    const org = await gh.makeOrg("globex");
    const { token } = await exchange(org.owner.token, service);
    expect(await code(exchange(token, service))).toBe(Code.Unauthenticated);
    expect(await code(exchange(token, gh.config.baseUrl))).toBe(Code.Unauthenticated);
    // Nor does an API token refresh itself through the exchange.
    expect(await code(exchange(org.owner.token, gh.config.baseUrl))).toBe(Code.Unauthenticated);
  });

  it("are refused for an identity that is gone", async () => {
    const org = await gh.makeOrg("initech");
    const workload = await gh.makeIdentity(org.uid, ["registry.pull"]);
    await gh.store.deleteIdentity(workload.uid);
    expect(await code(exchange(workload.token, service))).toBe(Code.Unauthenticated);
  });
});
