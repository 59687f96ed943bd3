/**
 * What an anonymous registry token request may cost (issue 35, N7): a request naming deep
 * group paths once cost about 150x a plain one, every name component a few store reads.
 * Gatehouse here runs on a store that counts its calls; requests go over HTTP with fetch, as a
 * registry client's would. The bound: one store read per distinct repository name, whatever
 * its depth, at most 16 scopes a request. CPU figures: bench/registry-token.ts.
 *
 * Counted: the calls made while serving a request, and only those (startCountedServer: the
 * server's own sweeps call the store too); and the server's clock stands still, so that no
 * cache (the signing keys' refresh a minute) expires mid-test.
 */
import { decodeJwt } from "jose";
import { afterAll, beforeAll, expect, it } from "vitest";
import { ownerRole } from "../../src/auth/capabilities.js";
import type { Store } from "../../src/store/store.js";
import { newChildUid, newRootUid } from "../../src/uid.js";
import { type CountedServer, startCountedServer } from "../helpers/request-cost.js";

const service = "registry.cost.test";
const depth = 50;
let counted: CountedServer;
let store: Store;
let url: string;

beforeAll(async () => {
  counted = await startCountedServer({ GATEHOUSE_REGISTRY_AUDIENCE: service });
  store = counted.store;
  url = counted.config.authUrl;
  const now = Date.now();
  const person = await store.upsertPerson({
    uid: newRootUid(),
    issuer: "https://users.test",
    subject: "cost",
    name: "P",
    email: "",
    now,
  });
  const org = newRootUid();
  await store.createOrganization(
    { uid: org, name: "acme", description: "", now },
    { bindingUid: newChildUid(org), identityUid: person.uid, roleUid: ownerRole.uid },
  );
  const repo = (groupUid: string, name: string) =>
    store.createRepo({
      uid: newChildUid(groupUid),
      groupUid,
      name,
      description: "",
      aliases: [],
      public: true,
      now,
    });
  await repo(org, "app");
  let group = org;
  for (let i = 0; i < depth; i++) {
    const uid = newChildUid(group);
    await store.createGroup({ uid, parentUid: group, name: "a", description: "", now });
    group = uid;
  }
  await repo(group, "deep");
});
afterAll(async () => {
  await counted?.close();
});

const deepName = (last: string) => `acme/${"a/".repeat(depth)}${last}`;

/** Ask anonymously for pull on each name; the store calls it cost, and what it granted. */
async function ask(names: readonly string[]) {
  const before = counted.counts.calls;
  const scopes = names.map((n) => `&scope=repository:${n}:pull`).join("");
  const res = await fetch(`${url}/registry/token?service=${service}${scopes}`);
  const json = (await res.json()) as { token?: string; error?: string; error_description?: string };
  return { status: res.status, json, calls: counted.counts.calls - before };
}

it("reads the store once per distinct name, whatever its depth", async () => {
  const plain = await ask(["acme/app"]);
  expect(plain.status).toBe(200);
  expect(plain.calls).toBeGreaterThan(0);
  // Sixteen different names, each walking all fifty groups: none may cost more than a plain one.
  const names = Array.from({ length: 16 }, (_, i) => deepName(`x${i}`));
  names[0] = deepName("deep");
  const deep = await ask(names);
  expect(deep.status).toBe(200);
  expect(deep.calls).toBeLessThanOrEqual(16 * plain.calls);
  // The deep public repo was found and granted; the others name no repo and get nothing.
  const access = decodeJwt(deep.json.token!).access as { name: string; actions: string[] }[];
  expect(access[0]).toEqual({ type: "repository", name: deepName("deep"), actions: ["pull"] });
  expect(access.slice(1).every((a) => a.actions.length === 0)).toBe(true);
  // One name asked sixteen times is resolved once.
  const same = await ask(Array.from({ length: 16 }, () => deepName("deep")));
  expect(same.status).toBe(200);
  expect(same.calls).toBeLessThanOrEqual(plain.calls);
});

it("refuses a seventeenth scope before any store work, in the token protocol's error shape", async () => {
  const res = await ask(Array.from({ length: 17 }, (_, i) => deepName(`x${i}`)));
  expect(res.status).toBe(400);
  expect(res.json).toEqual({
    error: "invalid_request",
    error_description: "at most 16 scopes may be asked for at once",
  });
  expect(res.calls).toBe(0);
});
