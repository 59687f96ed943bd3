import { readFileSync } from "node:fs";
import { Code } from "@connectrpc/connect";
import { beforeAll, expect, it } from "vitest";
import { codeName } from "../../src/errors.js";
import { httpStatusOf } from "../../src/rest/error-body.js";
import { restCall } from "../helpers/rest-client.js";
import { type TestOrg, useTestServer } from "../helpers/test-server.js";

// docs/api.md said 429 and 501 where the server answers 413 (a body over the limit) and 405 (a
// method a path does not have). Each row of its Errors table is checked here against the
// server: through REST wherever a client can cause the code, else against the server's own
// mapping (CANCELLED, UNAVAILABLE, ... need a failing database or a vanishing client).

const doc = readFileSync(new URL("../../docs/api.md", import.meta.url), "utf8");

/** The rows of the table under "| code | HTTP | except |". */
function statusRows(): { codes: string[]; status: number; except?: number }[] {
  const start = doc.indexOf("| code | HTTP | except |");
  expect(start, "docs/api.md has no status table").toBeGreaterThan(0);
  const lines = doc.slice(start).split("\n").slice(2);
  const rows = [];
  for (const line of lines) {
    if (!line.startsWith("|")) break;
    const [codes, http, except] = line
      .split("|")
      .slice(1, 4)
      .map((c) => c.trim());
    rows.push({
      codes: (codes as string).split(",").map((c) => c.trim()),
      status: Number(/^\d{3}/.exec(http as string)?.[0]),
      ...(except ? { except: Number(/^\d{3}/.exec(except)?.[0]) } : {}),
    });
  }
  return rows;
}

let org: TestOrg;

const ts = useTestServer();
beforeAll(async () => {
  org = await ts.makeOrg("statuses");
});

const groups = () => `/iam/v2beta1/groups/${org.uid}`;
const asOwner = (method: string, path: string, body?: unknown) =>
  restCall(ts.url, method, path, body, org.owner.headers);

/** What a REST client sees for a call: HTTP status and the body's gRPC code. */
type Seen = { status: number; code: number };
const seen = async (r: Promise<{ status: number; json: { code?: number } }>): Promise<Seen> => {
  const { status, json } = await r;
  return { status, code: json.code ?? -1 };
};
const raw = async (method: string, path: string, headers: Record<string, string>, body: string) => {
  const res = await fetch(ts.url + path, {
    method,
    headers: { ...org.owner.headers, ...headers },
    body,
  });
  return { status: res.status, json: (await res.json()) as { code?: number } };
};

/** REST calls that make the server answer with a code. */
const byCode: Record<string, () => Promise<Seen>> = {
  INVALID_ARGUMENT: () => seen(asOwner("POST", groups(), { name: "Not A Name!" })),
  FAILED_PRECONDITION: async () => {
    const parent = await asOwner("POST", groups(), { name: "parent" });
    await asOwner("POST", `/iam/v2beta1/groups/${parent.json.uid}`, { name: "child" });
    return seen(asOwner("DELETE", `/iam/v2beta1/groups/${parent.json.uid}`));
  },
  UNAUTHENTICATED: () => seen(restCall(ts.url, "GET", `/iam/v2beta1/groups/${org.uid}`)),
  PERMISSION_DENIED: async () => {
    const nobody = await ts.makeIdentity(org.uid, []);
    return seen(
      restCall(ts.url, "GET", `/iam/v2beta1/groups/${org.uid}`, undefined, nobody.headers),
    );
  },
  NOT_FOUND: () => seen(asOwner("GET", `/iam/v2beta1/groups/${org.uid}/0123456789abcdef`)),
  ALREADY_EXISTS: async () => {
    await asOwner("POST", groups(), { name: "twice" });
    return seen(asOwner("POST", groups(), { name: "twice" }));
  },
};

/** REST calls that make the server answer with the status of an "except" cell. */
const byException: Record<number, () => Promise<Seen>> = {
  415: () => seen(raw("POST", groups(), { "content-type": "text/plain" }, "name=x")),
  413: () =>
    seen(
      raw(
        "POST",
        groups(),
        { "content-type": "application/json" },
        JSON.stringify({ name: "big", description: "x".repeat(1024 * 1024) }),
      ),
    ),
  405: () => seen(asOwner("PUT", groups(), { name: "put" })),
};

const codeOf = (name: string) =>
  (Object.values(Code).filter((c) => typeof c === "number") as Code[]).find(
    (c) => codeName(c) === name.replace("CANCELLED", "CANCELED"),
  );

it("the table has every row the server has a status for", () => {
  const rows = statusRows();
  expect(rows.length).toBeGreaterThanOrEqual(10);
  const documented = rows.flatMap((r) => r.codes);
  for (const c of [Code.InvalidArgument, Code.ResourceExhausted, Code.Unimplemented]) {
    expect(documented).toContain(codeName(c));
  }
});

it.each(statusRows().flatMap((r) => r.codes.map((code) => [code, r.status] as const)))(
  "%s is HTTP %i",
  async (name, status) => {
    const provoke = byCode[name];
    if (provoke) {
      const answer = await provoke();
      expect(answer).toEqual({ status, code: codeOf(name) });
    } else if (name === "anything else") {
      for (const c of [Code.Unknown, Code.Internal, Code.DataLoss])
        expect(httpStatusOf(c)).toBe(status);
    } else {
      const code = codeOf(name);
      expect(code, `unknown code ${name} in docs/api.md`).toBeDefined();
      expect(httpStatusOf(code as Code)).toBe(status);
    }
  },
);

it.each(statusRows().flatMap((r) => (r.except ? [[r.codes.join(", "), r.except] as const] : [])))(
  "%s: HTTP %i where the table says so",
  async (codes, status) => {
    const provoke = byException[status];
    expect(provoke, `no way to cause HTTP ${status}`).toBeDefined();
    const answer = await (provoke as () => Promise<Seen>)();
    expect(answer.status).toBe(status);
    // One of the row's codes (415 is INVALID_ARGUMENT's).
    expect(codes.split(", ").map(codeOf)).toContain(answer.code);
  },
);
