import { createContextValues } from "@connectrpc/connect";
import { afterEach, expect, it } from "vitest";
import { storeRoles } from "../../src/auth/capabilities.js";
import { kCallChange, readingStore, setCallReason, storeOf } from "../../src/call-store.js";
import { changeScope } from "../../src/events/audit-scope.js";
import { createSqliteStore } from "../../src/store/sqlite/sqlite-store.js";
import type { Store } from "../../src/store/store.js";
import { listQuery } from "../store/store-suite.js";

// A call's provenance travels with the call: the audit interceptor hands the handler its scope
// and the store's view for it (kCallChange), and the store learns who made the change from
// that view alone. The handlers' own store only reads.

const stores: Store[] = [];
afterEach(async () => {
  for (const s of stores.splice(0)) await s.close();
});

function open(): Store {
  const store = createSqliteStore(":memory:", { roles: storeRoles });
  stores.push(store);
  return store;
}

const events = (store: Store) =>
  store.listEvents(listQuery() as Parameters<Store["listEvents"]>[0]).then((p) => p.items);

/** The context of a mutating call by `actorUid`, as the audit interceptor hands it over. */
function callBy(store: Store, actorUid: string, requestId: string) {
  const scope = changeScope({
    type: "dev.gatehouse.iam.group.created.v1",
    source: "/gatehouse.iam.v2beta1.GroupsService",
    actorUid,
    requestId,
    protocol: "connect",
  });
  return {
    values: createContextValues().set(kCallChange, { scope, store: store.recording(scope) }),
  };
}

it("records each change with the actor, request id and reason its own call handed it", async () => {
  const store = open();
  const first = callBy(store, "alice", "req-a");
  const second = callBy(store, "bob", "req-b");
  setCallReason(second, "invite", { inviteUid: "i1" });
  // Interleaved, as two calls served at once are: each change names its own call.
  await Promise.all([
    storeOf(second).createGroup({ uid: "g2", parentUid: "", name: "b", description: "", now: 2 }),
    storeOf(first).createGroup({ uid: "g1", parentUid: "", name: "a", description: "", now: 1 }),
  ]);
  const bySubject = new Map((await events(store)).map((e) => [e.subject, JSON.parse(e.data)]));
  expect(bySubject.get("g1")).toMatchObject({ actor: { uid: "alice" }, requestId: "req-a" });
  expect(bySubject.get("g1")?.reason).toBeUndefined();
  expect(bySubject.get("g2")).toMatchObject({
    actor: { uid: "bob" },
    requestId: "req-b",
    reason: "invite",
    via: { inviteUid: "i1" },
  });
});

it("refuses a change outside its call's view, where it would record nothing", async () => {
  const store = open();
  const handlers = readingStore(store);
  // Reads go through.
  expect(await handlers.getGroup("g1")).toBeUndefined();
  expect(() =>
    handlers.createGroup({ uid: "g1", parentUid: "", name: "a", description: "", now: 1 }),
  ).toThrow(/outside its call's view/);
  expect(() => handlers.atomically(async () => undefined)).toThrow(/outside its call's view/);
  // A read's context hands no view: a change there is refused too.
  expect(() => storeOf({ values: createContextValues() })).toThrow(/outside a mutating call/);
  expect(await store.getGroup("g1")).toBeUndefined();
  expect(await events(store)).toEqual([]);
});
