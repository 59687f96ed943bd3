import { create, toBinary } from "@bufbuild/protobuf";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CreateIdentityRequestSchema } from "../../gen/gatehouse/iam/v2beta1/identities_pb.js";
import { grpcEnvelope, rawGrpc } from "../helpers/raw-grpc.js";
import { badRequestFields, restCall } from "../helpers/rest-client.js";
import {
  backends,
  startTestServer,
  type TestOrg,
  type TestServer,
  useTestServer,
} from "../helpers/test-server.js";

// issue 23, "left from before": input the API stored although it would spoof a display, was
// lost without a word, or differed between the backends.

const identity = (claims: string) =>
  `{"name":"ci","claimMatch":{"issuer":"https://ci.test","subject":"job","claims":${claims}}}`;

describe("a __proto__ claim key is refused, not dropped, on every protocol", () => {
  let org: TestOrg;
  const ts = useTestServer();
  beforeAll(async () => {
    org = await ts.makeOrg("proto-key");
  });

  it("REST", async () => {
    const res = await fetch(`${ts.url}/iam/v2beta1/identities/${org.uid}`, {
      method: "POST",
      headers: { ...org.owner.headers, "content-type": "application/json" },
      body: identity('{"__proto__":"must-match","env":"prod"}'),
    });
    const json = (await res.json()) as { message: string };
    expect(res.status).toBe(400);
    expect(json.message).toContain("__proto__");
  });

  // A body nested as deep as the 1 MiB message limit allows: JSON.parse reads any depth, and
  // the search for the key went as deep by recursion, which 3,346 levels of `{"group":` (a
  // 33 kB body, found by test/reliability/bad-input.test.ts) took past the call stack: 500.
  const deep = (levels: number, inner: string) =>
    `${'{"group":'.repeat(levels)}${inner}${"}".repeat(levels)}`;

  it("REST: a body nested 50,000 deep is a client's mistake (400), and a key deep in one is found", async () => {
    const nested = await fetch(`${ts.url}/iam/v2beta1/roleBindings`, {
      method: "PATCH",
      headers: { ...org.owner.headers, "content-type": "application/json" },
      body: deep(50_000, "1"),
    });
    expect(nested.status).toBe(400);
    expect(((await nested.json()) as { message: string }).message).toContain("unknown field");
    const hidden = await fetch(`${ts.url}/iam/v2beta1/identities/${org.uid}`, {
      method: "POST",
      headers: { ...org.owner.headers, "content-type": "application/json" },
      body: deep(50_000, '{"__proto__":1}'),
    });
    expect(hidden.status).toBe(400);
    expect(((await hidden.json()) as { message: string }).message).toMatch(
      /^Invalid argument: identity\.(group\.){50000}__proto__/,
    );
  });

  it("Connect JSON: a body nested 50,000 deep, with an escape, is a client's mistake", async () => {
    // An escape (\u0031) makes the server read the text for the key before decoding it (that
    // search's overflow was answered as a decoding failure there, 400, never a 500).
    const res = await fetch(`${ts.url}/gatehouse.iam.v2beta1.IdentitiesService/CreateIdentity`, {
      method: "POST",
      headers: { ...org.owner.headers, "content-type": "application/json" },
      body: deep(50_000, '"\\u0031"'),
    });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { code: string }).code).toBe("invalid_argument");
  });

  it("REST, with the key written as JSON escapes", async () => {
    const res = await fetch(`${ts.url}/iam/v2beta1/identities/${org.uid}`, {
      method: "POST",
      headers: { ...org.owner.headers, "content-type": "application/json" },
      body: identity('{"\\u005f_proto__":"must-match"}'),
    });
    expect(res.status).toBe(400);
  });

  it("Connect JSON", async () => {
    const res = await fetch(`${ts.url}/gatehouse.iam.v2beta1.IdentitiesService/CreateIdentity`, {
      method: "POST",
      headers: { ...org.owner.headers, "content-type": "application/json" },
      body: `{"parent":"${org.uid}","identity":${identity('{"__proto__":"must-match"}')}}`,
    });
    const json = (await res.json()) as { code: string; message: string };
    expect(json.code).toBe("invalid_argument");
    expect(json.message).toContain("__proto__");
  });

  /** The request in protobuf binary, with a map entry keyed __proto__ written on the wire. */
  const binary = () => {
    const req = create(CreateIdentityRequestSchema, {
      parent: org.uid,
      identity: {
        name: "ci",
        method: { case: "claimMatch", value: { issuer: "https://ci.test", subject: "job" } },
      },
    });
    const cm = (req.identity!.method as { value: { claims: Record<string, string> } }).value;
    // An own property, as a decoder of another language would hold the entry.
    Object.defineProperty(cm.claims, "__proto__", { value: "must-match", enumerable: true });
    cm.claims.env = "prod";
    const bytes = toBinary(CreateIdentityRequestSchema, req);
    expect(Buffer.from(bytes).includes("__proto__")).toBe(true);
    return grpcEnvelope(bytes);
  };

  it("gRPC", async () => {
    const answer = await rawGrpc(
      ts.url,
      "/gatehouse.iam.v2beta1.IdentitiesService/CreateIdentity",
      org.owner.headers,
      binary(),
    );
    expect(answer.grpcStatus).toBe("3");
    expect(decodeURIComponent(String(answer.headers["grpc-message"]))).toContain("__proto__");
  });

  it("a claim value or description that merely mentions __proto__ is kept", async () => {
    const r = await restCall(
      ts.url,
      "POST",
      `/iam/v2beta1/identities/${org.uid}`,
      {
        name: "ci",
        description: "about __proto__",
        claimMatch: { issuer: "https://ci.test", subject: "job", claims: { ref: "__proto__" } },
      },
      org.owner.headers,
    );
    expect(r.status).toBe(200);
    expect(r.json.claimMatch.claims).toEqual({ ref: "__proto__" });
  });
});

describe("names and descriptions that would spoof a display are refused", () => {
  let ts: TestServer;
  let org: TestOrg;
  beforeAll(async () => {
    ts = await startTestServer();
    org = await ts.makeOrg("spoof");
  });
  afterAll(async () => {
    await ts?.close();
  });

  const createRole = (name: string, description = "") =>
    restCall(
      ts.url,
      "POST",
      `/iam/v2beta1/roles/${org.uid}`,
      { name, description, capabilities: ["groups.list"] },
      org.owner.headers,
    );
  const createIdentity = (name: string, description = "") =>
    restCall(
      ts.url,
      "POST",
      `/iam/v2beta1/identities/${org.uid}`,
      { name, description, claimMatch: { issuer: "https://ci.test", subject: `s-${name.length}` } },
      org.owner.headers,
    );

  for (const [what, name] of [
    ["a right-to-left override", "admin\u202Etxt.exe"],
    ["a right-to-left isolate", "ci\u2067bot"],
    ["a zero-width space", "ad\u200Bmin"],
    ["a zero-width joiner", "ad\u200Dmin"],
    ["a byte-order mark", "\uFEFFadmin"],
    ["an escape", "ci\u001b[31m"],
    ["a line separator", "ci\u2028bot"],
  ] as const) {
    it(`a name with ${what}`, async () => {
      for (const r of [await createRole(name), await createIdentity(name)]) {
        expect(r.status).toBe(400);
        expect(badRequestFields(r.json)).toEqual(["name"]);
        expect(r.json.message).toContain("printable");
      }
    });
  }

  for (const [what, description] of [
    ["an escape sequence", "builds \u001b[2J\u001b[1;1Hall clear"],
    ["a right-to-left override", "builds \u202Eevil"],
    ["a lone carriage return", "builds\rall clear"],
    ["a bell", "builds\u0007"],
  ] as const) {
    it(`a description with ${what}`, async () => {
      for (const r of [
        await createRole("r", description),
        await createIdentity("i", description),
      ]) {
        expect(r.status).toBe(400);
        expect(badRequestFields(r.json)).toEqual(["description"]);
      }
    });
  }

  it("names and descriptions in other scripts, with line breaks and tabs, are kept", async () => {
    const r = await createIdentity("Zoë שלום 日本", "line one\nline two\r\n\tindented");
    expect(r.status).toBe(200);
    expect(r.json).toMatchObject({
      name: "Zoë שלום 日本",
      description: "line one\nline two\r\n\tindented",
    });
  });
});

describe.each(backends)("a NUL character in any string input, on %s", (backend) => {
  let ts: TestServer;
  let org: TestOrg;
  beforeAll(async () => {
    ts = await startTestServer({}, { backend });
    org = await ts.makeOrg("nul");
  });
  afterAll(async () => {
    await ts?.close();
  });

  it("in a claimMatch claim value or claim name", async () => {
    for (const claims of [{ env: "pr\u0000od" }, { "e\u0000nv": "prod" }]) {
      const r = await restCall(
        ts.url,
        "POST",
        `/iam/v2beta1/identities/${org.uid}`,
        { name: "ci", claimMatch: { issuer: "https://ci.test", subject: "job", claims } },
        org.owner.headers,
      );
      expect(r.status).toBe(400);
      expect(r.json.message).toContain("NUL");
      expect(badRequestFields(r.json)[0]).toMatch(/^claimMatch\.claims\[/);
    }
  });

  it("in an identity provider's clientId", async () => {
    const r = await restCall(
      ts.url,
      "POST",
      `/iam/v2beta1/identityProviders/${org.uid}`,
      {
        name: "corp",
        oidc: { issuer: "https://login.example.com", clientId: "gate\u0000house" },
      },
      org.owner.headers,
    );
    expect(r.status).toBe(400);
    expect(badRequestFields(r.json)).toEqual(["oidc.clientId"]);
  });

  it("over gRPC too, before the call reaches the store", async () => {
    const res = await fetch(`${ts.url}/gatehouse.iam.v2beta1.GroupsService/CreateGroup`, {
      method: "POST",
      headers: { ...org.owner.headers, "content-type": "application/json" },
      body: JSON.stringify({ parent: org.uid, group: { name: "a", description: "x\u0000y" } }),
    });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { message: string }).message).toContain("NUL");
  });
});
