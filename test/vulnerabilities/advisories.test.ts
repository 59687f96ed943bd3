import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { beforeAll, describe, expect, it } from "vitest";
import {
  type Advisory,
  EventType,
} from "../../gen/gatehouse/vulnerabilities/v2beta1/advisories_pb.js";
import {
  failure,
  protocols,
  type RegistryClients,
  registryClients,
} from "../helpers/registry-clients.js";
import { useTestServer } from "../helpers/test-server.js";

const ts = useTestServer();

/** Every advisory of a list request, following page tokens. */
async function listAll(
  c: RegistryClients,
  req: Parameters<RegistryClients["advisories"]["listAdvisories"]>[0],
): Promise<Advisory[]> {
  const out: Advisory[] = [];
  let pageToken = "";
  do {
    const page = await c.advisories.listAdvisories({ ...req, pageSize: 7, pageToken });
    out.push(...page.advisories);
    pageToken = page.nextPageToken ?? "";
  } while (pageToken);
  return out;
}

describe.each(protocols)("advisories over %s", (protocol) => {
  // The owner manages groups; advisory writes need the advisories.admin role.
  let owner: RegistryClients;
  let c: RegistryClients;
  let org: string;
  beforeAll(async () => {
    const acme = await ts.makeOrg("acme");
    org = acme.uid;
    owner = registryClients(ts.url, protocol, acme.owner.token);
    c = registryClients(ts.url, protocol, (await ts.makeIdentity(org, ["advisories.admin"])).token);
  });

  it("lets the owner read advisories but only advisories.admin write them", async () => {
    const made = await c.advisories.createAdvisory({
      parent: org,
      advisory: { advisoryId: `OWN-${protocol}` },
    });
    expect(await owner.advisories.getAdvisory({ uid: made.uid })).toEqual(made);
    const denied = [
      owner.advisories.createAdvisory({ parent: org, advisory: { advisoryId: "X-1" } }),
      owner.advisories.updateAdvisory({ advisory: { uid: made.uid, summary: "x" } }),
      owner.advisories.deleteAdvisory({ uid: made.uid }),
    ];
    for (const call of denied) expect((await failure(call)).code).toBe(7);
    const other = registryClients(ts.url, protocol, (await ts.makeOrg("other")).owner.token);
    expect((await failure(other.advisories.getAdvisory({ uid: made.uid }))).code).toBe(7);
    const listed = await other.advisories.listAdvisories({ query: `own-${protocol}` });
    expect(listed.totalCount).toBe(0n);
    await c.advisories.deleteAdvisory({ uid: made.uid });
  });

  it("keeps events in time order, derives the latest type, and updates", async () => {
    const created = await c.advisories.createAdvisory({
      parent: org,
      advisory: {
        advisoryId: "GO-2024-0001",
        aliases: ["CVE-2024-1234"],
        summary: "bad things",
        componentName: "golang.org/x/net",
        componentType: "Go",
        severities: [{ type: "CVSS_V3", score: "7.5" }],
        events: [
          { time: timestampFromMs(2000), type: EventType.FIXED, fixedVersion: "0.1.0" },
          { time: timestampFromMs(1000), type: EventType.DETECTED, note: "scan" },
        ],
      },
    });
    expect(created.uid).toMatch(new RegExp(`^${org}/[0-9a-f]{16}$`));
    expect(created.events.map((e) => e.type)).toEqual([EventType.DETECTED, EventType.FIXED]);
    expect(created.latestEventType).toBe(EventType.FIXED);
    expect(await c.advisories.getAdvisory({ uid: created.uid })).toEqual(created);

    const updated = await c.advisories.updateAdvisory({
      advisory: {
        uid: created.uid,
        events: [
          ...created.events,
          { time: timestampFromMs(3000), type: EventType.FALSE_POSITIVE },
        ],
        summary: "ignored",
      },
      updateMask: { paths: ["events", "latest_event_type"] },
    });
    expect(updated).toMatchObject({ summary: "bad things", aliases: ["CVE-2024-1234"] });
    expect(updated.latestEventType).toBe(EventType.FALSE_POSITIVE);

    const dup = await failure(
      c.advisories.createAdvisory({ parent: org, advisory: { advisoryId: "GO-2024-0001" } }),
    );
    expect(dup.code).toBe(6);
    await c.advisories.deleteAdvisory({ uid: created.uid });
    expect((await failure(c.advisories.getAdvisory({ uid: created.uid }))).code).toBe(5);
  });

  it("validates per field", async () => {
    const err = await failure(
      c.advisories.createAdvisory({
        parent: org,
        advisory: {
          advisoryId: "",
          aliases: ["ok", "not ok"],
          summary: "two\nlines",
          events: [{ type: EventType.EVENT_TYPE_UNSPECIFIED, fixedVersion: "1" }],
        },
      }),
    );
    expect(err.code).toBe(3);
    expect(err.fields).toEqual([
      "advisory_id",
      "aliases[1]",
      "summary",
      "events[0].type",
      "events[0].fixed_version",
    ]);
    const list = await failure(c.advisories.listAdvisories({ latestEventType: 99 as EventType }));
    expect(list.fields).toEqual(["latest_event_type"]);
  });

  it("answers the filters and query as an in-memory oracle does", async () => {
    const group = (await owner.groups.createGroup({ parent: org, group: { name: "oracle" } })).uid;
    const components = ["stdlib", "golang.org/x/net", "github.com/Gin-Gonic/gin", "example.com/A"];
    const artifacts = ["", "registry.example/app", "registry.example/web"];
    const types = [EventType.DETECTED, EventType.FIXED, EventType.FALSE_POSITIVE];
    // A fixed pseudo-random sequence, so a failure can be replayed.
    let seed = 7;
    const pick = <T>(xs: readonly T[]): T => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return xs[seed % xs.length]!;
    };
    const made: Advisory[] = [];
    for (let i = 0; i < 30; i++) {
      made.push(
        await c.advisories.createAdvisory({
          parent: group,
          advisory: {
            advisoryId: `${pick(["GO", "GHSA", "PYSEC"])}-2024-${String(i).padStart(4, "0")}`,
            aliases: i % 3 === 0 ? [] : [`CVE-2024-${1000 + i}`, ...(i % 4 ? [] : ["GHSA-xx"])],
            artifactName: pick(artifacts),
            componentName: pick(components),
            events: [{ time: timestampFromMs(1000 + i), type: pick(types) }],
          },
        }),
      );
    }
    const hay = (a: Advisory) =>
      [a.advisoryId, ...a.aliases, a.artifactName, a.componentName].map((s) => s.toLowerCase());
    const cases: [string, object, (a: Advisory) => boolean][] = [
      ["alias", { aliases: "GHSA-xx" }, (a) => a.aliases.includes("GHSA-xx")],
      ["artifact", { artifactName: artifacts[1] }, (a) => a.artifactName === artifacts[1]],
      ["component", { componentName: "stdlib" }, (a) => a.componentName === "stdlib"],
      ["latest", { latestEventType: EventType.FIXED }, (a) => a.latestEventType === 4],
      ...["gin", "GIN-go", "cve-2024-10", "x/", "ghsa", "2024-001", "a", "registry.EXAMPLE/w"].map(
        (q): [string, object, (a: Advisory) => boolean] => [
          `query ${q}`,
          { query: q },
          (a) => hay(a).some((h) => h.includes(q.toLowerCase())),
        ],
      ),
      [
        "query and component",
        { query: "cve", componentName: "stdlib" },
        (a) => a.componentName === "stdlib" && hay(a).some((h) => h.includes("cve")),
      ],
    ];
    for (const [what, filters, oracle] of cases) {
      const got = await listAll(c, { uidp: { childrenOf: group }, orderBy: "name", ...filters });
      const want = made
        .filter(oracle)
        .map((a) => a.advisoryId)
        .sort();
      expect(
        got.map((a) => a.advisoryId),
        what,
      ).toEqual(want);
    }
  });
});
