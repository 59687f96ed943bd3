/**
 * What a page of the people view costs (the review of issue 39 item 5): each person on a page
 * cost a store call for their role bindings, another for the organization's identity providers
 * (for a person scoped to one), and two statements in the store (their origin, their teams).
 * Gatehouse here runs on a SQLite store that counts the calls and statements made serving
 * requests (startCountedServer); the page is asked for over HTTP with fetch, as the console
 * does. The bound: a page of thirty costs what a page of three does.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { builtinRoles, ownerRole } from "../../src/auth/capabilities.js";
import { providerPersonUid } from "../../src/auth/login/person.js";
import type { SqliteStore } from "../../src/store/sqlite/sqlite-store.js";
import { newChildUid, newRootUid } from "../../src/uid.js";
import { type CountedServer, startCountedServer } from "../helpers/request-cost.js";

const viewer = builtinRoles.find((r) => r.name === "viewer")!.uid;
const editor = builtinRoles.find((r) => r.name === "editor")!.uid;
const issuer = "https://sso.people.test";
const people = 30;

let counted: CountedServer;
let store: SqliteStore;
let url: string;
let org: string;
let team: string;
let provider: string;
let headers: Record<string, string>;

beforeAll(async () => {
  counted = await startCountedServer();
  store = counted.store;
  url = counted.config.baseUrl;
  const now = counted.now;
  const owner = await store.upsertPerson({
    uid: newRootUid(),
    issuer: "https://users.test",
    subject: "owner",
    name: "Owner",
    email: "owner@people.test",
    now,
  });
  org = newRootUid();
  await store.createOrganization(
    { uid: org, name: "acme", description: "", now },
    { bindingUid: newChildUid(org), identityUid: owner.uid, roleUid: ownerRole.uid },
  );
  headers = {
    authorization: `Bearer ${(await counted.server.tokens.issue(owner.uid, url)).token}`,
  };
  provider = newChildUid(org);
  await store.createIdentityProvider({
    uid: provider,
    groupUid: org,
    name: "SSO",
    description: "",
    defaultRole: "",
    oidc: { issuer, clientId: "c", clientSecret: "s", additionalScopes: [], groupsClaim: "" },
    writerUid: owner.uid,
    now,
  });
  team = newChildUid(org);
  await store.createTeam({ uid: team, groupUid: org, name: "eng", description: "", now });
  await store.createRoleBinding({
    uid: newChildUid(org),
    groupUid: org,
    identityUid: "",
    teamUid: team,
    roleUid: editor,
    now,
  });
  // Every person signed in through the organization's provider before origins were recorded
  // (so the view finds the provider from their uid), holds viewer and is in the team.
  const uids: string[] = [];
  for (let i = 0; i < people; i++) {
    const subject = `p${String(i).padStart(2, "0")}`;
    const person = await store.upsertPerson({
      uid: providerPersonUid(provider, issuer, subject),
      issuer,
      subject,
      name: `Person ${subject}`,
      email: `${subject}@people.test`,
      now: now + i,
    });
    uids.push(person.uid);
    await store.createRoleBinding({
      uid: newChildUid(org),
      groupUid: org,
      identityUid: person.uid,
      roleUid: viewer,
      now: now + i,
    });
  }
  await store.addTeamMembers(team, uids, now);
});

afterAll(async () => {
  await counted?.close();
});

/** One page of the people whose name has "Person", as the console asks; what it cost. */
async function page(size: number) {
  const before = { ...counted.counts };
  const res = await fetch(
    `${url}/iam/v2beta1/people?groupUid=${org}&query=Person&pageSize=${size}&orderBy=name`,
    { headers },
  );
  const json = (await res.json()) as {
    people: {
      name: string;
      origin: string;
      identityProviderUid: string;
      roleBindings: { role: { uid: string }; team?: { uid: string } }[];
      teams: { uid: string }[];
    }[];
  };
  expect(res.status, JSON.stringify(json)).toBe(200);
  const { calls, statements } = counted.counts;
  return { json, calls: calls - before.calls, statements: statements - before.statements };
}

it("costs a page of thirty people what it costs a page of three", async () => {
  // Warmed once: the access caches and the statements prepared.
  await page(3);
  const small = await page(3);
  const large = await page(people);
  expect(small.json.people).toHaveLength(3);
  expect(large.json.people).toHaveLength(people);
  // Each person as the view shows them, whatever the batching.
  for (const [i, p] of large.json.people.entries()) {
    expect(p.name).toBe(`Person p${String(i).padStart(2, "0")}`);
    expect(p.origin).toBe("ORIGIN_IDENTITY_PROVIDER");
    expect(p.identityProviderUid).toBe(provider);
    expect(p.teams.map((t) => t.uid)).toEqual([team]);
    expect(p.roleBindings.map((b) => [b.role.uid, b.team?.uid ?? ""]).sort()).toEqual(
      [
        [editor, team],
        [viewer, ""],
      ].sort(),
    );
  }
  // Counted at all (a count of nothing would pass), then not growing with the page.
  expect(small.calls).toBeGreaterThan(0);
  expect(small.statements).toBeGreaterThan(0);
  expect(large.calls).toBe(small.calls);
  expect(large.statements).toBe(small.statements);
});
