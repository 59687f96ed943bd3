import { validate } from "@readme/openapi-parser";
import createClient from "openapi-fetch";
import { beforeAll, describe, expect, it } from "vitest";
import { reservedExpansion } from "../../src/openapi/openapi-document.js";
import { type TestOrg, useTestServer } from "../helpers/test-server.js";

// The OpenAPI document the server builds from its descriptors, checked by a kept validator
// and used, as a generic client would, to call the REST API.
type Doc = {
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, Schema>; securitySchemes: Record<string, unknown> };
};
type Operation = {
  operationId: string;
  parameters?: { name: string; in: string; [k: string]: unknown }[];
  security?: unknown[];
  responses: Record<string, unknown>;
};
type Schema = {
  properties?: Record<string, { readOnly?: boolean }>;
  required?: string[];
};

let org: TestOrg;
let doc: Doc;

const ts = useTestServer();
beforeAll(async () => {
  org = await ts.makeOrg();
  const res = await fetch(`${ts.url}/openapi.json`);
  expect(res.status).toBe(200);
  expect(res.headers.get("content-type")).toMatch(/^application\/json/);
  doc = (await res.json()) as Doc;
});

/** The path and HTTP method of an operation, found by its operationId. */
function operation(id: string): { path: string; method: string; op: Operation } {
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(item)) {
      if (op.operationId === id) return { path, method: method.toUpperCase(), op };
    }
  }
  throw new Error(`no operation ${id} in ${JSON.stringify(doc.paths).slice(0, 300)}`);
}

describe("the OpenAPI document", () => {
  it("validates as OpenAPI 3.1", async () => {
    const result = await validate(structuredClone(doc) as never);
    expect(result.valid ? [] : result.errors).toEqual([]);
    expect(result.warnings).toEqual([]);
    expect(result.specification).toBe("OpenAPI");
  });

  it("has every REST binding of the served services, bearer-guarded but the public ones", () => {
    expect(doc.components.securitySchemes.bearer).toMatchObject({ type: "http", scheme: "bearer" });
    const get = operation("GroupsService_GetGroup");
    expect(get).toMatchObject({ path: "/iam/v2beta1/groups/{uid}", method: "GET" });
    expect(get.op.security).toEqual([{ bearer: [] }]);
    expect(get.op.responses.default).toEqual({ $ref: "#/components/responses/Error" });
    // The STS exchange authenticates by its own bearer (an OIDC token): public to the policy.
    expect(operation("SecurityTokenService_Exchange").op.security).toEqual([]);
    expect(doc.components.schemas["google.rpc.Status"]?.required).toEqual(["code"]);
  });

  it("lists the list parameters by proto field path", () => {
    const names = operation("GroupsService_ListGroups").op.parameters!.map((p) => p.name);
    expect(names).toEqual(
      expect.arrayContaining([
        "uidp.descendants_of",
        "uidp.children_of",
        "page_size",
        "page_token",
        "order_by",
      ]),
    );
  });

  it("carries field behaviours: REQUIRED as required, OUTPUT_ONLY as readOnly", () => {
    const group = doc.components.schemas["gatehouse.iam.v2beta1.Group"]!;
    expect(group.required).toEqual(["name"]);
    expect(group.properties?.createTime?.readOnly).toBe(true);
    expect(group.properties?.verified?.readOnly).toBe(true);
    expect(group.properties?.name?.readOnly).toBeUndefined();
  });

  it("marks a uid path parameter as written with its slashes", () => {
    const uid = operation("GroupsService_GetGroup").op.parameters!.find((p) => p.name === "uid")!;
    expect(uid).toMatchObject({ in: "path", required: true, [reservedExpansion]: true });
  });
});

describe("a generic client driven by the document", () => {
  // openapi-fetch, with a path serializer that reads the document: a parameter marked
  // reserved is written as RFC 6570 {+var} would (slashes kept), others fully encoded.
  const client = () =>
    createClient<never>({
      baseUrl: ts.url,
      headers: org.owner.headers,
      // openapi-fetch hands over the whole URL: the base URL, then the document's path.
      pathSerializer: (url, params) => {
        const pathname = url.slice(ts.url.length);
        const reserved = new Set(
          Object.values(doc.paths[pathname] ?? {})
            .flatMap((op) => op.parameters ?? [])
            .filter((p) => p.in === "path" && p[reservedExpansion] === true)
            .map((p) => p.name),
        );
        const filled = pathname.replace(/\{([^}]+)\}/g, (_, name: string) => {
          const value = String(params[name]);
          return reserved.has(name) ? encodeURI(value) : encodeURIComponent(value);
        });
        return ts.url + filled;
      },
    });
  const call = async (id: string, init: Record<string, unknown>) => {
    const { path, method } = operation(id);
    const c = client() as unknown as Record<
      string,
      (p: string, i: unknown) => Promise<{ data?: unknown; error?: unknown; response: Response }>
    >;
    return c[method]!(path, init);
  };

  it("creates, gets and lists groups below a child group", async () => {
    const child = await call("GroupsService_CreateGroup", {
      params: { path: { parent: org.uid } },
      body: { name: "team" },
    });
    expect([child.response.status, child.error]).toEqual([200, undefined]);
    const team = child.data as { uid: string };
    expect(team.uid).toMatch(new RegExp(`^${org.uid}/[0-9a-f]{16}$`));

    // CreateGroup with a child group (a uid with a slash) as the parent.
    const made = await call("GroupsService_CreateGroup", {
      params: { path: { parent: team.uid } },
      body: { name: "svc", description: "below a child" },
    });
    expect([made.response.status, made.error]).toEqual([200, undefined]);
    const svc = made.data as { uid: string; name: string };
    expect(svc.uid.startsWith(`${team.uid}/`)).toBe(true);

    const got = await call("GroupsService_GetGroup", { params: { path: { uid: svc.uid } } });
    expect(got.response.status).toBe(200);
    expect(got.data).toMatchObject({ uid: svc.uid, name: "svc", description: "below a child" });

    const listed = await call("GroupsService_ListGroups", {
      params: { query: { "uidp.children_of": team.uid, page_size: 10 } },
    });
    expect([listed.response.status, listed.error]).toEqual([200, undefined]);
    expect((listed.data as { groups: { uid: string }[] }).groups.map((g) => g.uid)).toEqual([
      svc.uid,
    ]);
  });

  it("names no resource when the uid's slashes are escaped (why the mark is there)", async () => {
    const plain = createClient<never>({ baseUrl: ts.url, headers: org.owner.headers });
    const team = (
      await call("GroupsService_CreateGroup", {
        params: { path: { parent: org.uid } },
        body: { name: "escaped" },
      })
    ).data as { uid: string };
    const res = await (
      plain as unknown as Record<string, (p: string, i: unknown) => Promise<{ response: Response }>>
    ).GET!("/iam/v2beta1/groups/{uid}", { params: { path: { uid: team.uid } } });
    expect(res.response.url).toContain("%2F");
    expect(res.response.ok).toBe(false);
  });
});
