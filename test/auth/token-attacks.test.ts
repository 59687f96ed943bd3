import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import { exportSPKI, generateKeyPair, importJWK, type JWTPayload, SignJWT } from "jose";
import { beforeAll, describe, expect, it } from "vitest";
import { GroupsService } from "../../gen/gatehouse/iam/v2beta1/groups_pb.js";
import { ErrorInfoSchema } from "../../gen/google/rpc/error_details_pb.js";
import { createKeyRing, type KeyRing } from "../../src/auth/keyring.js";
import { bootstrapOrganization } from "../../src/cli/bootstrap.js";
import { newChildUid } from "../../src/uid.js";
import { startTestServer, useTestServer } from "../helpers/test-server.js";

// Forged and spoiled bearer tokens against a running server: each must be refused with 401 and
// `WWW-Authenticate: Bearer` over REST and UNAUTHENTICATED over Connect and gRPC.

let ring: KeyRing;
let orgUid: string;
let ownerUid: string;
let goneUid: string;
let valid: string;
let forGone: string;

const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString("base64url");
const nowSec = () => Math.floor(Date.now() / 1000);
const claims = (over: JWTPayload = {}): JWTPayload => ({
  iss: ts.config.authUrl,
  sub: ownerUid,
  aud: ts.config.baseUrl,
  iat: nowSec(),
  exp: nowSec() + 3600,
  ...over,
});

/** Sign with the server's real signing key: every check but the signature is on trial. */
async function ours(payload: JWTPayload): Promise<string> {
  const { kid, key } = await ring.signingKey();
  return new SignJWT(payload).setProtectedHeader({ alg: "ES256", typ: "JWT", kid }).sign(key);
}

async function publicJwk() {
  const res = await fetch(`${ts.url}/.well-known/jwks.json`);
  const { keys } = (await res.json()) as { keys: Array<Record<string, string>> };
  return keys[0]!;
}

const attacks: Array<[string, () => Promise<string>]> = [
  ["alg none", async () => `${b64({ alg: "none", typ: "JWT" })}.${b64(claims())}.`],
  [
    "alg none with our kid",
    async () =>
      `${b64({ alg: "none", typ: "JWT", kid: (await publicJwk()).kid })}.${b64(claims())}.`,
  ],
  [
    "HS256 keyed with our public JWK",
    async () => {
      const jwk = await publicJwk();
      return new SignJWT(claims())
        .setProtectedHeader({ alg: "HS256", typ: "JWT", kid: jwk.kid! })
        .sign(new TextEncoder().encode(JSON.stringify(jwk)));
    },
  ],
  [
    "HS256 keyed with our public key as PEM",
    async () => {
      const jwk = await publicJwk();
      const pem = await exportSPKI((await importJWK(jwk, "ES256", { extractable: true })) as never);
      return new SignJWT(claims())
        .setProtectedHeader({ alg: "HS256", typ: "JWT", kid: jwk.kid! })
        .sign(new TextEncoder().encode(pem));
    },
  ],
  [
    "an unknown kid",
    async () => {
      const { privateKey } = await generateKeyPair("ES256");
      return new SignJWT(claims())
        .setProtectedHeader({ alg: "ES256", typ: "JWT", kid: "not-one-of-ours" })
        .sign(privateKey);
    },
  ],
  [
    "a stranger's key under our kid",
    async () => {
      const { privateKey } = await generateKeyPair("ES256");
      return new SignJWT(claims())
        .setProtectedHeader({ alg: "ES256", typ: "JWT", kid: (await publicJwk()).kid! })
        .sign(privateKey);
    },
  ],
  [
    "no kid",
    async () => {
      const { key } = await ring.signingKey();
      return new SignJWT(claims()).setProtectedHeader({ alg: "ES256", typ: "JWT" }).sign(key);
    },
  ],
  ["expired", () => ours(claims({ iat: nowSec() - 7200, exp: nowSec() - 300 }))],
  ["nbf in the future", () => ours(claims({ nbf: nowSec() + 600 }))],
  ["a wrong aud", () => ours(claims({ aud: "https://elsewhere.test" }))],
  ["a wrong iss", () => ours(claims({ iss: "https://evil.test" }))],
  [
    "an altered payload",
    async () => {
      const [h, , s] = valid.split(".");
      return `${h}.${b64(claims({ sub: `${orgUid}/ffffffffffffffff` }))}.${s}`;
    },
  ],
  [
    "an ECDSA signature of zeros",
    async () => {
      const [h, p] = valid.split(".");
      return `${h}.${p}.${Buffer.alloc(64).toString("base64url")}`;
    },
  ],
  ["garbage", async () => "not.a.jwt"],
  ["a deleted identity", async () => forGone],
];

let connect: ReturnType<typeof createClient<typeof GroupsService>>;
let grpc: ReturnType<typeof createClient<typeof GroupsService>>;

const ts = useTestServer();
beforeAll(async () => {
  ring = createKeyRing({ store: ts.store });
  ({ orgUid, identityUid: ownerUid } = await bootstrapOrganization(ts.store, "acme", Date.now()));
  goneUid = newChildUid(orgUid);
  await ts.store.createIdentity({
    uid: goneUid,
    groupUid: orgUid,
    name: "gone",
    description: "",
    claimMatch: {
      issuer: "https://issuer.test",
      issuerPattern: "",
      subject: "gone",
      subjectPattern: "",
      audience: "",
      audiencePattern: "",
      claims: {},
      claimPatterns: {},
    },
    now: Date.now(),
  });
  valid = await ours(claims());
  forGone = await ours(claims({ sub: goneUid }));
  // Accepted while it exists (and so cached by the verifier), refused once deleted.
  expect((await getOrg(forGone)).status).not.toBe(401);
  await ts.store.deleteIdentity(goneUid);
  connect = createClient(
    GroupsService,
    createConnectTransport({ baseUrl: ts.url, httpVersion: "1.1" }),
  );
  grpc = createClient(GroupsService, createGrpcTransport({ baseUrl: ts.url }));
});

function getOrg(token: string) {
  return fetch(`${ts.url}/iam/v2beta1/groups/${orgUid}`, {
    headers: { authorization: `Bearer ${token}` },
  });
}

async function rpcCode(client: typeof connect, token: string): Promise<Code | "OK"> {
  try {
    await client.getGroup({ uid: orgUid }, { headers: { authorization: `Bearer ${token}` } });
    return "OK";
  } catch (err) {
    return ConnectError.from(err).code;
  }
}

describe("token attacks", () => {
  it("accepts a valid token (control)", async () => {
    const res = await getOrg(valid);
    expect(res.status).toBe(200);
    expect(await rpcCode(connect, valid)).toBe("OK");
    expect(await rpcCode(grpc, valid)).toBe("OK");
  });

  it.each(attacks)("refuses %s", async (_name, make) => {
    const token = await make();
    const res = await getOrg(token);
    expect(res.status).toBe(401);
    expect(res.headers.get("www-authenticate")).toMatch(/^Bearer/);
    const body = (await res.json()) as { code: number; message: string };
    expect(body.code).toBe(Code.Unauthenticated);
    expect(body.message).not.toContain(token);
    expect(await rpcCode(connect, token)).toBe(Code.Unauthenticated);
    expect(await rpcCode(grpc, token)).toBe(Code.Unauthenticated);
  });
});

// What a refused token's bearer may be told, because the token itself says it; anything else
// is just INVALID_TOKEN. Over REST the RFC 6750 challenge, over RPCs the ErrorInfo reason.
const reasons: Record<string, string> = {
  expired: "TOKEN_EXPIRED",
  "nbf in the future": "TOKEN_NOT_YET_VALID",
  "a wrong aud": "WRONG_AUDIENCE",
  "a wrong iss": "UNKNOWN_ISSUER",
  "a stranger's key under our kid": "INVALID_TOKEN",
  "an altered payload": "INVALID_TOKEN",
  garbage: "INVALID_TOKEN",
  "a deleted identity": "INVALID_TOKEN",
};

async function rpcReason(client: typeof connect, token: string): Promise<string | undefined> {
  try {
    await client.getGroup({ uid: orgUid }, { headers: { authorization: `Bearer ${token}` } });
    return undefined;
  } catch (err) {
    const info = ConnectError.from(err).findDetails(ErrorInfoSchema)[0];
    return info?.reason;
  }
}

describe("why a token is refused", () => {
  it.each(attacks.filter(([name]) => name in reasons))("%s", async (name, make) => {
    const token = await make();
    const reason = reasons[name]!;
    const res = await getOrg(token);
    expect(res.status).toBe(401);
    expect(res.headers.get("www-authenticate")).toMatch(
      /^Bearer error="invalid_token", error_description="[^"]+"$/,
    );
    const body = (await res.json()) as { details: { reason: string; domain: string }[] };
    expect(body.details[0]).toMatchObject({ reason, domain: "iam.gatehouse.test" });
    expect(await rpcReason(connect, token)).toBe(reason);
    expect(await rpcReason(grpc, token)).toBe(reason);
  });

  it("asks for a token, with no error code, when none is sent (RFC 6750 3.1)", async () => {
    const res = await fetch(`${ts.url}/iam/v2beta1/groups/${orgUid}`);
    expect(res.status).toBe(401);
    expect(res.headers.get("www-authenticate")).toBe("Bearer");
    const body = (await res.json()) as { details: { reason: string }[] };
    expect(body.details[0]?.reason).toBe("UNAUTHENTICATED");
  });
});

it("logs every refusal with the request's id, and never the token", async () => {
  const lines: string[] = [];
  const logged = await startTestServer(
    { GATEHOUSE_LOG_LEVEL: "info" },
    { logStream: { write: (l) => void lines.push(l) } },
  );
  try {
    const token = "not.a.jwt";
    await fetch(`${logged.url}/iam/v2beta1/groups/${"a".repeat(40)}`, {
      headers: { authorization: `Bearer ${token}`, "x-request-id": "req-refused-1" },
    });
    const refusal = lines.map((l) => JSON.parse(l)).find((l) => l.msg === "bearer token rejected");
    expect(refusal).toMatchObject({ reqId: "req-refused-1", reason: "malformed" });
    expect(lines.join("\n")).not.toContain(token);
  } finally {
    await logged.close();
  }
});
