import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { type Client, Code, ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcWebTransport } from "@connectrpc/connect-node";
import * as grpc from "@grpc/grpc-js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  EventSchema,
  EventsService,
  ExportEventsRequestSchema,
} from "../../gen/gatehouse/events/v2beta1/events_pb.js";
import { GroupsService } from "../../gen/gatehouse/iam/v2beta1/groups_pb.js";
import { ErrorInfoSchema } from "../../gen/google/rpc/error_details_pb.js";
import { exportPageSize } from "../../src/services/events/export-events.js";
import { type Protocol, protocols, transportFor } from "../helpers/iam-clients.js";
import { badRequestFields, type Json } from "../helpers/rest-client.js";
import { runCli } from "../helpers/run-cli.js";
import {
  backends,
  startTestServer,
  type TestOrg,
  type TestServer,
} from "../helpers/test-server.js";

// ExportEvents: a time range of the audit trail in one streamed answer, for a SIEM. Over REST
// as JSON Lines (fetch), over Connect and gRPC as a server stream, and through the CLI's
// `events export`: the same events as ListEvents' pages, the same filters, only the caller's
// organizations, and clear refusals of a bad request.

const exportPath = "/events/v2beta1/events:export";

describe.each(backends)("ExportEvents on %s", (backend) => {
  let gh: TestServer;
  let a: TestOrg;
  let b: TestOrg;
  let start: number;
  const made: string[] = [];

  beforeAll(async () => {
    gh = await startTestServer({}, { backend });
    start = Date.now() - 1000;
    a = await gh.makeOrg("acme");
    b = await gh.makeOrg("other");
    // More events than one page of the store holds: the export follows its cursor.
    const groups = createClient(GroupsService, transportFor("connect", gh.url, a.owner.headers));
    const count = exportPageSize + 20;
    for (let i = 0; i < count; i += 10) {
      const batch = await Promise.all(
        Array.from({ length: Math.min(10, count - i) }, (_, k) =>
          groups.createGroup({ parent: a.uid, group: { name: `g${i + k}` } }),
        ),
      );
      made.push(...batch.map((g) => g.uid));
    }
    // Organization B's own event, which A's owner must never see.
    const other = createClient(GroupsService, transportFor("connect", gh.url, b.owner.headers));
    await other.createGroup({ parent: b.uid, group: { name: "b-only" } });
  }, 240_000);
  afterAll(async () => {
    await gh?.close();
  });

  /** Every event ListEvents lists to `of` with `query`, oldest first, every page. */
  async function listed(of: TestOrg, query: string): Promise<Json[]> {
    const out: Json[] = [];
    let token = "";
    do {
      const res = await fetch(
        `${gh.url}/events/v2beta1/events?${query}&page_size=200&order_by=create_time${token ? `&page_token=${token}` : ""}`,
        { headers: of.owner.headers },
      );
      expect(res.status).toBe(200);
      const page = (await res.json()) as Json;
      out.push(...page.events);
      token = page.nextPageToken ?? "";
    } while (token);
    return out;
  }

  /** GET the export with `query` as `headers`: status, content type and its lines. */
  async function exported(query: string, headers: Record<string, string>) {
    const res = await fetch(`${gh.url}${exportPath}?${query}`, { headers });
    const text = await res.text();
    const type = res.headers.get("content-type") ?? "";
    const lines = type.startsWith("application/x-ndjson")
      ? text
          .split("\n")
          .filter((l) => l !== "")
          .map((l) => JSON.parse(l) as Json)
      : [];
    return {
      status: res.status,
      type,
      text,
      lines,
      json: lines.length ? undefined : tryJson(text),
    };
  }

  const since = () => new Date(start).toISOString();

  it("answers JSON Lines over REST: ListEvents' events, every page of the store, in order", async () => {
    const query = `start_time=${since()}`;
    const got = await exported(query, a.owner.headers);
    expect(got.status).toBe(200);
    expect(got.type).toMatch(/^application\/x-ndjson/);
    const want = await listed(a, `start_time=${since()}&end_time=${new Date().toISOString()}`);
    expect(got.lines.length).toBeGreaterThan(exportPageSize);
    // Each line is the event as ListEvents answers it over REST.
    expect(got.lines).toEqual(want.slice(0, got.lines.length));
    const created = got.lines
      .filter((e) => e.type === "dev.gatehouse.iam.group.created.v1")
      .map((e) => e.subject);
    expect(created).toEqual(expect.arrayContaining(made));
    const times = got.lines.map((e) => Date.parse(e.time));
    expect([...times].sort((x, y) => x - y)).toEqual(times);
    // Nothing of organization B.
    expect(got.text).not.toContain(b.uid);
  });

  it("takes ListEvents' filters: type family, actor, subtree and time range", async () => {
    const one = made[3]!;
    const byType = await exported(
      `start_time=${since()}&type=group&uidp.descendants_of=${one}`,
      a.owner.headers,
    );
    expect(byType.lines.map((e) => [e.type, e.subject])).toEqual([
      ["dev.gatehouse.iam.group.created.v1", one],
    ]);
    // camelCase as well as snake_case, as every REST query.
    const byActor = await exported(
      `startTime=${since()}&actor=${b.owner.uid}&uidp.descendantsOf=${a.uid}`,
      a.owner.headers,
    );
    expect(byActor).toMatchObject({ status: 200, lines: [] });
    // A range that ends before anything happened: an empty answer, still JSON Lines.
    const before = new Date(start - 3_600_000).toISOString();
    const empty = await exported(
      `start_time=${before}&end_time=${new Date(start - 1000).toISOString()}`,
      a.owner.headers,
    );
    expect(empty).toMatchObject({ status: 200, text: "" });
    expect(empty.type).toMatch(/^application\/x-ndjson/);
  });

  it("shows an organization's owner nothing of another organization", async () => {
    const theirs = await exported(`start_time=${since()}`, b.owner.headers);
    expect(theirs.status).toBe(200);
    expect(theirs.lines.length).toBeGreaterThan(0);
    for (const e of theirs.lines) expect(e.uid.startsWith(`${b.uid}/`)).toBe(true);
    expect(theirs.text).not.toContain(a.uid);
    // Asking for A's subtree by name gets nothing either.
    const asked = await exported(
      `start_time=${since()}&uidp.descendants_of=${a.uid}`,
      b.owner.headers,
    );
    expect(asked).toMatchObject({ status: 200, text: "" });
    // A viewer of A holds no events.list: nothing.
    const viewer = await gh.makeIdentity(a.uid, ["viewer"]);
    const seen = await exported(`start_time=${since()}`, viewer.headers);
    expect(seen).toMatchObject({ status: 200, text: "" });
  });

  // One day of January: a good range, so that each case is refused for its one field.
  const day = "start_time=2026-01-01T00:00:00Z&end_time=2026-01-02T00:00:00Z";
  it.each([
    ["no start_time", "end_time=2026-01-02T00:00:00Z", "start_time"],
    [
      "a range over 31 days",
      "start_time=2026-01-01T00:00:00Z&end_time=2026-03-01T00:00:00Z",
      "end_time",
    ],
    [
      "an end before the start",
      "start_time=2026-01-02T00:00:00Z&end_time=2026-01-01T00:00:00Z",
      "end_time",
    ],
    ["a malformed type", `${day}&type=Role-Binding!`, "type"],
    ["a malformed subtree", `${day}&uidp.descendants_of=x%20y`, "uidp.descendants_of"],
    ["an unknown parameter", `${day}&page_size=5`, "page_size"],
    ["a time that is none", "start_time=yesterday", "start_time"],
  ])("refuses %s over REST with 400 and the field", async (_what, query, field) => {
    const got = await exported(query, a.owner.headers);
    expect(got.status).toBe(400);
    expect(got.json).toMatchObject({ code: Code.InvalidArgument });
    expect(badRequestFields(got.json)).toEqual([field]);
  });

  it("refuses a call without a valid token with 401", async () => {
    const none = await exported(`start_time=${since()}`, {});
    expect(none.status).toBe(401);
    expect(none.json).toMatchObject({ code: Code.Unauthenticated });
    const bad = await exported(`start_time=${since()}`, { authorization: "Bearer nope" });
    expect(bad.status).toBe(401);
  });

  describe.each(protocols)("as a server stream over %s", (protocol: Protocol) => {
    const clientOf = (headers: Record<string, string>): Client<typeof EventsService> =>
      createClient(EventsService, transportFor(protocol, gh.url, headers));

    it("streams what REST exports, and refuses what REST refuses", async () => {
      const startTime = timestampFromMs(start);
      const rest = await exported(`start_time=${since()}`, a.owner.headers);
      const uids: string[] = [];
      for await (const e of clientOf(a.owner.headers).exportEvents({ startTime })) {
        uids.push(e.uid);
      }
      // Events of the export's own reads are none: the same events, in the same order.
      expect(uids.slice(0, rest.lines.length)).toEqual(rest.lines.map((e) => e.uid));
      const theirs: string[] = [];
      const stream = clientOf(b.owner.headers).exportEvents({
        startTime,
        uidp: { descendantsOf: a.uid },
      });
      for await (const e of stream) theirs.push(e.uid);
      expect(theirs).toEqual([]);
      const refused = async (req: Parameters<Client<typeof EventsService>["exportEvents"]>[0]) => {
        try {
          for await (const _ of clientOf(a.owner.headers).exportEvents(req)) {
            // nothing is expected
          }
        } catch (err) {
          return ConnectError.from(err);
        }
        throw new Error("not refused");
      };
      const noStart = await refused({});
      expect(noStart.code).toBe(Code.InvalidArgument);
      expect(noStart.message).toContain("start_time");
      const wide = await refused({
        startTime: timestampFromMs(0),
        endTime: timestampFromMs(40 * 24 * 3_600_000),
      });
      expect(wide.code).toBe(Code.InvalidArgument);
      expect(wide.message).toContain("end_time");
      const nul = await refused({ startTime, actor: "a\u0000b" });
      expect(nul.code).toBe(Code.InvalidArgument);
      expect(nul.message).toContain("actor");
    });
  });

  it("streams to a grpc-js client and a gRPC-Web client as to the others", async () => {
    const rest = await exported(`start_time=${since()}`, a.owner.headers);
    const request = toBinary(
      ExportEventsRequestSchema,
      create(ExportEventsRequestSchema, { startTime: timestampFromMs(start) }),
    );
    const client = new grpc.Client(`127.0.0.1:${gh.port}`, grpc.credentials.createInsecure());
    const md = new grpc.Metadata();
    md.set("authorization", `Bearer ${a.owner.token}`);
    const uids = await new Promise<string[]>((resolve, reject) => {
      const got: string[] = [];
      const call = client.makeServerStreamRequest(
        `/${EventsService.typeName}/ExportEvents`,
        (x: Buffer) => x,
        (x: Buffer) => fromBinary(EventSchema, x),
        Buffer.from(request),
        md,
      );
      call.on("data", (e: { uid: string }) => got.push(e.uid));
      call.on("error", reject);
      call.on("end", () => resolve(got));
    });
    client.close();
    expect(uids.slice(0, rest.lines.length)).toEqual(rest.lines.map((e) => e.uid));
    const web = createClient(
      EventsService,
      createGrpcWebTransport({
        baseUrl: gh.url,
        httpVersion: "1.1",
        interceptors: [
          (next) => (req) => {
            req.header.set("authorization", `Bearer ${a.owner.token}`);
            return next(req);
          },
        ],
      }),
    );
    const viaWeb: string[] = [];
    for await (const e of web.exportEvents({ startTime: timestampFromMs(start) })) {
      viaWeb.push(e.uid);
    }
    expect(viaWeb.slice(0, rest.lines.length)).toEqual(rest.lines.map((e) => e.uid));
  });

  it("cuts a stream short when the store fails part-way, its cause never sent", async () => {
    // The second page of the store fails (the first was sent): as a disk or a database would.
    const store = gh.store as unknown as Record<string, unknown>;
    const own = Object.getOwnPropertyDescriptor(store, "listEvents");
    const real = gh.store.listEvents.bind(gh.store);
    let reads = 0;
    store.listEvents = async (q: Parameters<typeof real>[0]) => {
      reads++;
      if (reads > 1) throw new Error("disk on fire at /var/lib/secret-path");
      return real(q);
    };
    try {
      const res = await fetch(`${gh.url}${exportPath}?start_time=${since()}`, {
        headers: a.owner.headers,
      });
      expect(res.status).toBe(200);
      // The body does not end cleanly: no client takes a cut export for a whole one.
      await expect(res.text()).rejects.toThrow();
      // Over Connect and gRPC: the first page, then INTERNAL, its cause in no message.
      for (const protocol of protocols) {
        reads = 0;
        const client = createClient(EventsService, transportFor(protocol, gh.url, a.owner.headers));
        let got = 0;
        let failed: ConnectError | undefined;
        try {
          for await (const _ of client.exportEvents({ startTime: timestampFromMs(start) })) got++;
        } catch (err) {
          failed = ConnectError.from(err);
        }
        expect(got, protocol).toBe(exportPageSize);
        expect(failed?.code, protocol).toBe(Code.Internal);
        expect(failed?.message, protocol).not.toContain("secret-path");
        // An API error as any other: ErrorInfo first, its reason the code's name.
        expect(failed?.findDetails(ErrorInfoSchema)[0]?.reason, protocol).toBe("INTERNAL");
      }
    } finally {
      if (own) Object.defineProperty(store, "listEvents", own);
      else delete store.listEvents;
    }
    expect((await exported(`start_time=${since()}`, a.owner.headers)).status).toBe(200);
  });

  it("is what the CLI's events export prints, one event a line", async () => {
    const env = { GATEHOUSE_API: gh.url, GATEHOUSE_TOKEN: a.owner.token };
    const r = await runCli(
      ["events", "export", "--since", since(), "--type", "group", "--descendants-of", made[5]!],
      env,
    );
    expect(r.code, r.stderr).toBe(0);
    const lines = r.stdout
      .trimEnd()
      .split("\n")
      .map((l) => JSON.parse(l) as Json);
    expect(lines.map((e) => [e.type, e.subject])).toEqual([
      ["dev.gatehouse.iam.group.created.v1", made[5]],
    ]);
    const missing = await runCli(["events", "export", "--type", "group"], env);
    expect(missing.code).not.toBe(0);
    expect(missing.stderr).toContain("--since");
    const wide = await runCli(["events", "export", "--since", "40d"], env);
    expect(wide.code).toBe(1);
    expect(wide.stderr).toContain("31 days");
  });
});

function tryJson(text: string): Json {
  try {
    return JSON.parse(text) as Json;
  } catch {
    return undefined;
  }
}
