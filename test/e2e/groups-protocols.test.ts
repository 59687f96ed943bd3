import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  apiError,
  connectGroups,
  connectTransports,
  type GroupsApi,
  grpcJsGroups,
  restGroups,
} from "../helpers/groups-clients.js";
import { useTestServer } from "../helpers/test-server.js";

// One scenario, five clients: every protocol must behave the same on the one port.
const clients: Record<string, GroupsApi> = {};
const closers: (() => void)[] = [];

const ts = useTestServer();
beforeAll(async () => {
  // A person: the organizations it creates are its own.
  const { headers } = (await ts.makeOrg()).owner;
  const t = connectTransports(ts.url, headers);
  clients.rest = restGroups(ts.url, headers);
  clients.connect = connectGroups(t.connect);
  clients.grpcWeb = connectGroups(t.grpcWeb);
  clients.grpcConnectNode = connectGroups(t.grpc);
  const grpcJs = grpcJsGroups(ts.port, headers);
  clients.grpcJs = grpcJs;
  closers.push(() => grpcJs.close());
});

afterAll(async () => {
  for (const c of closers) c();
});

describe.each(["rest", "connect", "grpcWeb", "grpcConnectNode", "grpcJs"])(
  "groups over %s",
  (p) => {
    const api = () => clients[p]!;

    it("creates an organization, children, and reads them back", async () => {
      const org = await api().create("", { name: "acme", description: "the org" });
      expect(org.uid).toMatch(/^[0-9a-f]{40}$/);
      expect(org).toMatchObject({ name: "acme", description: "the org", verified: false });
      const team = await api().create(org.uid, { name: "team-a" });
      expect(team.uid).toMatch(new RegExp(`^${org.uid}/[0-9a-f]{16}$`));
      expect(await api().get(team.uid)).toEqual(team);
    });

    it("pages through descendants in name order with totals", async () => {
      const org = await api().create("", { name: "paging" });
      const a = await api().create(org.uid, { name: "team-a" });
      await api().create(org.uid, { name: "team-b" });
      await api().create(a.uid, { name: "svc" });

      const first = await api().list({ descendantsOf: org.uid, pageSize: 2, orderBy: "name" });
      expect(first.groups.map((g) => g.name)).toEqual(["svc", "team-a"]);
      expect(first.totalCount).toBe("3");
      expect(first.nextPageToken).not.toBe("");
      const second = await api().list({
        descendantsOf: org.uid,
        pageSize: 2,
        orderBy: "name",
        pageToken: first.nextPageToken,
      });
      expect(second.groups.map((g) => g.name)).toEqual(["team-b"]);
      expect(second.totalCount).toBe("3");
      expect(second.nextPageToken).toBe("");

      const children = await api().list({ childrenOf: org.uid, orderBy: "name desc" });
      expect(children.groups.map((g) => g.name)).toEqual(["team-b", "team-a"]);
      const skipped = await api().list({ descendantsOf: org.uid, orderBy: "name", skip: 1 });
      expect(skipped.groups.map((g) => g.name)).toEqual(["team-a", "team-b"]);
      expect(skipped.skipped).toBe(1);
    });

    it("updates the fields present, or those of the mask", async () => {
      const org = await api().create("", { name: "upd", description: "before" });
      const changed = await api().update({ uid: org.uid, description: "after" });
      expect(changed).toMatchObject({ name: "upd", description: "after" });
      // A name of its own per protocol: an organization renamed takes the new name's registry
      // namespace, which no other organization may then be renamed to (docs/registry.md).
      const renamed = `renamed-${p.toLowerCase()}`;
      const masked = await api().update({ uid: org.uid, name: renamed, description: "ignored" }, [
        "name",
      ]);
      expect(masked).toMatchObject({ name: renamed, description: "after" });
      expect(await api().get(org.uid)).toMatchObject({ name: renamed, description: "after" });
    });

    it("rejects a bad name with BadRequest details", async () => {
      const err = await apiError(() => api().create("", { name: "Bad Name!" }));
      expect(err).toMatchObject({
        code: 3,
        reason: "INVALID_ARGUMENT",
        domain: "iam.gatehouse.test",
        fields: ["name"],
      });
      expect(err.message).toMatch(/^Invalid argument: name: /);
    });

    it("refuses to delete a group with child groups, then deletes leaf first", async () => {
      const org = await api().create("", { name: "del" });
      const team = await api().create(org.uid, { name: "team" });
      const err = await apiError(() => api().delete(org.uid));
      expect(err).toMatchObject({
        code: 9,
        message: "Precondition failed: cannot delete group with child groups",
        reason: "FAILED_PRECONDITION",
        preconditions: ["RESOURCE_NOT_EMPTY"],
      });
      await api().delete(team.uid);
      // The caller still owns the organization, so it may learn that the team is gone.
      const gone = await apiError(() => api().get(team.uid));
      expect(gone).toMatchObject({ code: 5, reason: "NOT_FOUND" });
      await api().delete(org.uid);
      // The owner binding went with the organization: now nothing is revealed.
      const denied = await apiError(() => api().get(org.uid));
      expect(denied).toMatchObject({ code: 7, reason: "PERMISSION_DENIED" });
    });
  },
);

describe("many calls at once", () => {
  it("are all answered, on every protocol, without a process warning", async () => {
    const warnings: string[] = [];
    const onWarning = (w: Error) => warnings.push(`${w.name}: ${w.message}`);
    process.on("warning", onWarning);
    try {
      const org = await clients.connect!.create("", { name: "busy" });
      for (const p of ["connect", "grpcConnectNode", "grpcJs", "rest"]) {
        const got = await Promise.all(Array.from({ length: 40 }, () => clients[p]!.get(org.uid)));
        expect(
          got.every((g) => g.uid === org.uid),
          p,
        ).toBe(true);
      }
      // Warnings are emitted on a later tick (process.emitWarning: nextTick), before the
      // event loop's next turn.
      await new Promise((r) => setImmediate(r));
    } finally {
      process.off("warning", onWarning);
    }
    expect(warnings).toEqual([]);
  });
});
