/**
 * The registry token endpoint as a registry client reaches it, with fetch: what each caller
 * is granted, the form POST, workload OIDC tokens as passwords, and the refusals. The real
 * registry's view of the same tokens is test/registry/docker-registry.test.ts.
 */
import { decodeJwt, decodeProtectedHeader } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { builtinRoles } from "../../src/auth/capabilities.js";
import { libtrustKeyId } from "../../src/registry/libtrust.js";
import { newChildUid } from "../../src/uid.js";
import { type OidcIssuer, startOidcIssuer } from "../helpers/oidc-issuer.js";
import { type Json, restCall } from "../helpers/rest-client.js";
import {
  freePort,
  startTestServer,
  type TestCaller,
  type TestOrg,
  type TestServer,
} from "../helpers/test-server.js";

let gh: TestServer;
let org: TestOrg;
let idp: OidcIssuer;
let service: string;
let repoUid: string;

beforeAll(async () => {
  idp = await startOidcIssuer();
  service = `127.0.0.1:${await freePort()}`;
  gh = await startTestServer({
    GATEHOUSE_REGISTRY_AUDIENCE: service,
    GATEHOUSE_ALLOW_INSECURE_LOOPBACK_ISSUERS: "true",
  });
  org = await gh.makeOrg("initech");
  const made = await restCall(
    gh.url,
    "POST",
    `/registry/v2beta1/repos/${org.uid}`,
    { name: "app" },
    org.owner.headers,
  );
  repoUid = made.json.uid;
});
afterAll(async () => {
  await gh?.close();
  await idp?.stop();
});

const basic = (user: string, password: string) =>
  `Basic ${Buffer.from(`${user}:${password}`).toString("base64")}`;

/** GET the token endpoint with `query` as `authorization` (none: anonymous). */
async function getToken(query: string, authorization?: string) {
  const res = await fetch(`${gh.config.authUrl}/registry/token?${query}`, {
    headers: authorization ? { authorization } : {},
  });
  return {
    status: res.status,
    headers: res.headers,
    json: (await res.json()) as Json,
  };
}

/** The actions granted on `name` by a token for `actions` on it. */
async function granted(caller: TestCaller | undefined, name: string, actions = "pull,push,delete") {
  const q = `service=${service}&scope=repository:${name}:${actions}`;
  const res = await getToken(q, caller && basic("gatehouse", caller.token));
  expect(res.status).toBe(200);
  const access = decodeJwt(res.json.token).access as { name: string; actions: string[] }[];
  return access.find((a) => a.name === name)?.actions;
}

describe("registry token endpoint", () => {
  it("answers the token protocol with a signed five-minute token for the registry", async () => {
    const res = await getToken(
      `service=${service}&scope=repository:initech/app:pull&account=gatehouse`,
      basic("gatehouse", org.owner.token),
    );
    expect(res.status).toBe(200);
    expect(res.headers.get("cache-control")).toBe("no-store");
    expect(res.json.access_token).toBe(res.json.token);
    expect(res.json.expires_in).toBe(300);
    expect(Date.parse(res.json.issued_at)).not.toBeNaN();
    const claims = decodeJwt(res.json.token);
    expect(claims).toMatchObject({
      iss: gh.config.authUrl,
      aud: service,
      sub: org.owner.uid,
      access: [{ type: "repository", name: "initech/app", actions: ["pull"] }],
    });
    expect(claims.exp! - claims.iat!).toBe(300);
    // kid: the libtrust ID of the key that signs, which distribution looks keys up by.
    const jwk = (await gh.server.keyRing.signingKey()).publicJwk;
    expect(decodeProtectedHeader(res.json.token).kid).toBe(libtrustKeyId(jwk));
    expect(libtrustKeyId(jwk)).toMatch(/^([A-Z2-7]{4}:){11}[A-Z2-7]{4}$/);
  });

  it("grants by capability at the repo's group, inherited from above", async () => {
    expect(await granted(org.owner, "initech/app")).toEqual(["pull", "push", "delete"]);
    const puller = await gh.makeIdentity(org.uid, ["registry.pull"]);
    expect(await granted(puller, "initech/app")).toEqual(["pull"]);
    const pusher = await gh.makeIdentity(org.uid, ["registry.push"]);
    expect(await granted(pusher, "initech/app")).toEqual(["pull", "push", "delete"]);
    // The real service's viewer may pull, and so may a pull-token creator.
    const viewer = await gh.makeIdentity(org.uid, ["viewer"]);
    expect(await granted(viewer, "initech/app")).toEqual(["pull"]);
    const creator = await gh.makeIdentity(org.uid, ["registry.pull_token_creator"]);
    expect(await granted(creator, "initech/app")).toEqual(["pull"]);
    const advisor = await gh.makeIdentity(org.uid, ["advisories.admin"]);
    expect(await granted(advisor, "initech/app")).toEqual([]);
    // A binding in a subgroup grants nothing on a repo of the organization above it.
    const team = await gh.store.createGroup({
      uid: newChildUid(org.uid),
      parentUid: org.uid,
      name: "team",
      description: "",
      now: Date.now(),
    });
    const low = await gh.makeIdentity(org.uid, ["registry.push"], team.uid);
    expect(await granted(low, "initech/app")).toEqual([]);
  });

  it("grants a narrowed token (STS cap) only what it was narrowed to, directly or as a registry credential", async () => {
    const exchange = async (bearer: string, q: string) => {
      const res = await restCall(gh.url, "GET", `/sts/exchange?${q}`, undefined, {
        authorization: `Bearer ${bearer}`,
      });
      expect(res.status, JSON.stringify(res.json)).toBe(200);
      return res.json.token as string;
    };
    const pullOnly = await exchange(
      org.owner.token,
      `aud=${encodeURIComponent(gh.config.baseUrl)}&cap=registry.pull&cap=repo.list`,
    );
    const as = (token: string): TestCaller => ({ uid: org.owner.uid, token, headers: {} });
    expect(await granted(org.owner, "initech/app")).toEqual(["pull", "push", "delete"]);
    expect(await granted(as(pullOnly), "initech/app")).toEqual(["pull"]);
    // What docker-credential-gatehouse hands a registry: as narrow as the token it came from.
    const credential = await exchange(pullOnly, `aud=${encodeURIComponent(service)}`);
    expect(await granted(as(credential), "initech/app")).toEqual(["pull"]);
    // Confined to another group, it gets nothing here.
    const sub = await gh.store.createGroup({
      uid: newChildUid(org.uid),
      parentUid: org.uid,
      name: "elsewhere",
      description: "",
      now: Date.now(),
    });
    const elsewhere = await exchange(
      org.owner.token,
      `aud=${encodeURIComponent(gh.config.baseUrl)}&group=${encodeURIComponent(sub.uid)}`,
    );
    expect(await granted(as(elsewhere), "initech/app")).toEqual([]);
  });

  it("gives anonymous callers pull on public repos and nothing else", async () => {
    expect(await granted(undefined, "initech/app")).toEqual([]);
    await gh.store.updateRepo(repoUid, { public: true }, Date.now());
    try {
      expect(await granted(undefined, "initech/app")).toEqual(["pull"]);
      const stranger = await gh.makeIdentity((await gh.makeOrg("other")).uid, ["owner"]);
      expect(await granted(stranger, "initech/app")).toEqual(["pull"]);
    } finally {
      await gh.store.updateRepo(repoUid, { public: false }, Date.now());
    }
  });

  it("grants nothing on a repo that does not exist, or another kind of scope", async () => {
    expect(await granted(org.owner, "initech/nothing")).toEqual([]);
    expect(await granted(org.owner, "nosuchorg/app")).toEqual([]);
    expect(await granted(org.owner, "initech")).toEqual([]);
    const res = await getToken(
      `service=${service}&scope=registry:catalog:*`,
      basic("u", org.owner.token),
    );
    expect(decodeJwt(res.json.token).access).toEqual([
      { type: "registry", name: "catalog", actions: [] },
    ]);
  });

  it("accepts the form POST of containerd and newer docker clients", async () => {
    const post = (form: Record<string, string>) =>
      fetch(`${gh.config.authUrl}/registry/token`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams(form).toString(),
      });
    const res = await post({
      grant_type: "password",
      username: "gatehouse",
      password: org.owner.token,
      service,
      scope: "repository:initech/app:pull repository:initech/other:pull",
      client_id: "containerd",
    });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { access_token: string };
    expect(decodeJwt(body.access_token).access).toEqual([
      { type: "repository", name: "initech/app", actions: ["pull"] },
      { type: "repository", name: "initech/other", actions: [] },
    ]);
    const refresh = await post({
      grant_type: "refresh_token",
      refresh_token: org.owner.token,
      service,
    });
    expect(refresh.status).toBe(200);
    const wrong = await post({ grant_type: "client_credentials", service });
    expect(wrong.status).toBe(400);
    expect(await wrong.json()).toMatchObject({ error: "unsupported_grant_type" });
    const bad = await post({ grant_type: "password", username: "x", password: "nope", service });
    expect(bad.status).toBe(401);
  });

  it("takes a workload's OIDC token with its identity's uid as the username", async () => {
    const uid = newChildUid(org.uid);
    await gh.store.createIdentity({
      uid,
      groupUid: org.uid,
      name: "ci",
      description: "",
      claimMatch: {
        issuer: idp.url,
        issuerPattern: "",
        subject: "repo:initech/app",
        subjectPattern: "",
        audience: "",
        audiencePattern: "",
        claims: {},
        claimPatterns: {},
      },
      // An hour ago: lastSeenTime starts there, and moves when the token is taken.
      now: Date.now() - 3_600_000,
    });
    await gh.store.createRoleBinding({
      uid: newChildUid(org.uid),
      groupUid: org.uid,
      identityUid: uid,
      roleUid: builtinRoles.find((r) => r.name === "registry.pull")!.uid,
      now: Date.now(),
    });
    const oidc = await idp.issue({ sub: "repo:initech/app", aud: gh.config.baseUrl });
    const res = await getToken(
      `service=${service}&scope=repository:initech/app:pull,push`,
      basic(uid, oidc),
    );
    expect(res.status).toBe(200);
    expect(decodeJwt(res.json.token)).toMatchObject({
      sub: uid,
      access: [{ name: "initech/app", actions: ["pull"] }],
    });
    // Seen now, as after an exchange.
    expect((await gh.store.getIdentity(uid))?.lastSeenTime).toBeGreaterThan(Date.now() - 60_000);
    // Another subject's token, or the right token for another identity, is refused.
    const other = await idp.issue({ sub: "repo:initech/evil", aud: gh.config.baseUrl });
    expect((await getToken(`service=${service}`, basic(uid, other))).status).toBe(401);
    const someone = (await gh.makeIdentity(org.uid)).uid;
    expect((await getToken(`service=${service}`, basic(someone, oidc))).status).toBe(401);
  });

  it("refuses another service, bad credentials, malformed scopes and oversized queries", async () => {
    const owner = basic("gatehouse", org.owner.token);
    const other = await getToken("service=registry.example.com", owner);
    expect(other.status).toBe(400);
    expect(other.json.error_description).toMatch(/not this registry/);
    expect((await getToken("scope=repository:initech/app:pull", owner)).status).toBe(400);

    const bad = await getToken(`service=${service}`, basic("gatehouse", "not-a-token"));
    expect(bad.status).toBe(401);
    expect(bad.headers.get("www-authenticate")).toBe(
      `Basic realm="${gh.config.authUrl}/registry/token"`,
    );
    expect(bad.json.error).toBe("invalid_client");
    expect((await getToken(`service=${service}`, "Bearer x")).status).toBe(401);
    expect((await getToken(`service=${service}`, "Basic !!!")).status).toBe(401);
    // A Gatehouse token of a deleted identity no longer counts.
    const gone = await gh.makeIdentity(org.uid, ["registry.pull"]);
    await gh.store.deleteIdentity(gone.uid);
    expect((await getToken(`service=${service}`, basic("g", gone.token))).status).toBe(401);

    for (const scope of [
      "repository:initech/app",
      "repository:Initech/App:pull",
      "a:b:c:d",
      "repository::pull",
    ]) {
      const res = await getToken(`service=${service}&scope=${encodeURIComponent(scope)}`, owner);
      expect(res.status, scope).toBe(400);
      expect(res.json.error_description).toMatch(/scope/);
    }
    const many = Array.from({ length: 17 }, (_, i) => `scope=repository:initech/r${i}:pull`).join(
      "&",
    );
    expect((await getToken(`service=${service}&${many}`, owner)).status).toBe(400);
    const huge = await getToken(`service=${service}&account=${"a".repeat(5000)}`, owner);
    expect(huge.status).toBe(414);
    expect(huge.json.error_description).toMatch(/longer than 4096/);
  });
});
