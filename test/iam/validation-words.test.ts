import { beforeAll, expect, it } from "vitest";
import { type Json, restCall } from "../helpers/rest-client.js";
import { type TestOrg, useTestServer } from "../helpers/test-server.js";

// Validation errors showed raw regular expressions, twice (the message and the field
// violation): "name: must match ^[a-z0-9 ._-]{1,}$". They say what is allowed in words, and
// keep the BadRequest field violations.

let org: TestOrg;

const ts = useTestServer();
beforeAll(async () => {
  org = await ts.makeOrg("words");
});

/** The message and each field violation's description of a REST error body. */
function texts(json: Json): {
  message: string;
  violations: { field: string; description: string }[];
} {
  const bad = (json.details as Json[]).find((d) => String(d["@type"]).endsWith("BadRequest"));
  return { message: json.message, violations: bad?.fieldViolations ?? [] };
}

// What a regular expression looks like: anchors, classes, quantifiers.
const regexLike = /[\^$]|\[[^\]]*\]|\{\d*,?\d*\}/;

it("a bad group name is explained in words", async () => {
  const r = await restCall(
    ts.url,
    "POST",
    `/iam/v2beta1/groups/${org.uid}`,
    { name: "Team A!" },
    org.owner.headers,
  );
  expect(r.status).toBe(400);
  const { message, violations } = texts(r.json);
  expect(violations).toEqual([
    { field: "name", description: "may hold only lowercase letters a-z, digits, spaces and . _ -" },
  ]);
  expect(message).toBe(`Invalid argument: name: ${violations[0]!.description}`);
  expect(message).not.toMatch(regexLike);
});

it("a bad Google project id is explained in words", async () => {
  const r = await restCall(
    ts.url,
    "POST",
    `/iam/v2beta1/accountAssociations/${org.uid}`,
    { name: "gcp", google: { projectId: "My_Project", projectNumber: "42" } },
    org.owner.headers,
  );
  expect(r.status).toBe(400);
  const { message, violations } = texts(r.json);
  expect(violations.map((v) => v.field)).toEqual(["google.projectId"]);
  for (const text of [message, ...violations.map((v) => v.description)]) {
    expect(text).toContain("6-30 lowercase letters, digits and -");
    expect(text).not.toMatch(regexLike);
  }
});
