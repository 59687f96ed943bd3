import { readFileSync } from "node:fs";
import { create, createRegistry, fromBinary, toBinary } from "@bufbuild/protobuf";
import { anyUnpack } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, createClient, type Transport } from "@connectrpc/connect";
import {
  createConnectTransport,
  createGrpcTransport,
  createGrpcWebTransport,
} from "@connectrpc/connect-node";
import * as grpc from "@grpc/grpc-js";
import { beforeAll, describe, expect, it } from "vitest";
import { GetGroupRequestSchema, GroupsService } from "../../gen/gatehouse/iam/v2beta1/groups_pb.js";
import { AdvisoriesService } from "../../gen/gatehouse/vulnerabilities/v2beta1/advisories_pb.js";
import {
  file_google_rpc_error_details,
  QuotaFailureSchema,
  RetryInfoSchema,
} from "../../gen/google/rpc/error_details_pb.js";
import { StatusSchema } from "../../gen/google/rpc/status_pb.js";
import { Health, HealthCheckResponse_ServingStatus } from "../../gen/grpc/health/v1/health_pb.js";
import { ownerRole } from "../../src/auth/capabilities.js";
import { newChildUid, newRootUid } from "../../src/uid.js";
import { withHeaders } from "../helpers/groups-clients.js";
import { type TestCaller, type TestOrg, useTestServer } from "../helpers/test-server.js";

// Rate limits (issue 42 item 1, docs/api.md "Rate limits"): a token bucket per identity, or
// per client address without a valid token, on every protocol, with its details and headers
// as docs/api.md's table says. The server's clock is this file's: a bucket refills when the
// test moves it, never with the wall clock.

const doc = readFileSync(new URL("../../docs/api.md", import.meta.url), "utf8");

/** The rows of docs/api.md's table under "| protocol | client | answer | metadata | details |". */
function documentedRows(): Map<string, { answer: string; metadata: string[]; details: string[] }> {
  const start = doc.indexOf("| protocol | client | answer | metadata | details |");
  expect(start, "docs/api.md has no rate-limit table").toBeGreaterThan(0);
  const rows = new Map<string, { answer: string; metadata: string[]; details: string[] }>();
  for (const line of doc.slice(start).split("\n").slice(2)) {
    if (!line.startsWith("|")) break;
    const [protocol, , answer, metadata, details] = line
      .split("|")
      .slice(1, 6)
      .map((c) => c.trim().replace(/`/g, ""));
    const names = (s: string) => s.split(",").map((n) => n.trim());
    rows.set(protocol!, {
      answer: answer!,
      metadata: names(metadata!).map((n) => n.toLowerCase()),
      details: names(details!),
    });
  }
  return rows;
}

let clock = Date.now();
const period = 60_000;
const registry = createRegistry(file_google_rpc_error_details);

/** What a limited call showed a client: its code, metadata names and details, normalized. */
interface Seen {
  answer: string;
  metadata: Record<string, string>;
  details: string[];
  retryDelayMs: number;
  subject: string;
}

function fromConnect(e: unknown): Seen {
  const ce = ConnectError.from(e);
  const metadata: Record<string, string> = {};
  ce.metadata.forEach((v, k) => {
    metadata[k] = v;
  });
  const retry = ce.findDetails(RetryInfoSchema)[0];
  return {
    answer: Code[ce.code] === "ResourceExhausted" ? "RESOURCE_EXHAUSTED" : Code[ce.code]!,
    metadata,
    details: ce.details.map((d) => ("desc" in d ? d.desc.typeName : d.type).split(".").pop()!),
    retryDelayMs:
      Number(retry?.retryDelay?.seconds ?? -1) * 1000 + (retry?.retryDelay?.nanos ?? 0) / 1e6,
    subject: ce.findDetails(QuotaFailureSchema)[0]?.violations[0]?.subject ?? "",
  };
}

// The lean paths (gRPC on HTTP/2, unary Connect) and, with them off, connect's router.
describe.each(["true", "false"])("the API limit, per identity (lean paths: %s)", (lean) => {
  let org: TestOrg;
  const ts = useTestServer(
    {
      GATEHOUSE_RATE_LIMIT: "2/1m",
      GATEHOUSE_RATE_LIMIT_BURST: "3",
      GATEHOUSE_LEAN_PATHS: lean,
    },
    { now: () => clock },
  );
  beforeAll(async () => {
    org = await ts.makeOrg("limits");
  });

  /** A client of one protocol, calling GetGroup of the organization as `caller`. */
  type Call = (caller: TestCaller) => Promise<Seen | undefined>;
  const viaTransport =
    (make: (headers: Record<string, string>) => Transport): Call =>
    async (caller) => {
      const client = createClient(GroupsService, make(caller.headers));
      try {
        await client.getGroup({ uid: org.uid });
        return undefined;
      } catch (e) {
        return fromConnect(e);
      }
    };
  const base = () => ts.url;
  const protocols: Record<string, Call> = {
    Connect: viaTransport((h) =>
      createConnectTransport({
        baseUrl: base(),
        httpVersion: "1.1",
        interceptors: [withHeaders(h)],
      }),
    ),
    "gRPC-Web": viaTransport((h) =>
      createGrpcWebTransport({
        baseUrl: base(),
        httpVersion: "1.1",
        interceptors: [withHeaders(h)],
      }),
    ),
    // connect-node's gRPC and grpc-js both reach the lean gRPC path (HTTP/2, binary).
    gRPC: async (caller) => {
      const client = new grpc.Client(`127.0.0.1:${ts.port}`, grpc.credentials.createInsecure());
      const md = new grpc.Metadata();
      md.set("authorization", caller.headers.authorization!);
      const err = await new Promise<grpc.ServiceError | null>((resolve) =>
        client.makeUnaryRequest(
          "/gatehouse.iam.v2beta1.GroupsService/GetGroup",
          (x: Buffer) => x,
          (x: Buffer) => x,
          Buffer.from(
            toBinary(GetGroupRequestSchema, create(GetGroupRequestSchema, { uid: org.uid })),
          ),
          md,
          (e) => resolve(e),
        ),
      );
      client.close();
      if (!err) return undefined;
      const metadata: Record<string, string> = {};
      for (const [k, v] of Object.entries(err.metadata.getMap())) {
        if (typeof v === "string") metadata[k] = v;
      }
      const status = fromBinary(
        StatusSchema,
        err.metadata.get("grpc-status-details-bin")[0] as Buffer,
      );
      const details = status.details.map((a) => anyUnpack(a, registry)!);
      const retry = details.find((d) => d.$typeName === RetryInfoSchema.typeName) as
        | { retryDelay?: { seconds: bigint; nanos: number } }
        | undefined;
      const quota = details.find((d) => d.$typeName === QuotaFailureSchema.typeName) as
        | { violations: { subject: string }[] }
        | undefined;
      return {
        answer: grpc.status[err.code],
        metadata,
        details: details.map((d) => d.$typeName.split(".").pop()!),
        retryDelayMs:
          Number(retry?.retryDelay?.seconds ?? -1) * 1000 + (retry?.retryDelay?.nanos ?? 0) / 1e6,
        subject: quota?.violations[0]?.subject ?? "",
      };
    },
    REST: async (caller) => {
      const res = await fetch(`${ts.url}/iam/v2beta1/groups/${org.uid}`, {
        headers: caller.headers,
      });
      const json = (await res.json()) as {
        code?: number;
        details?: Record<string, unknown>[];
      };
      if (res.status === 200) return undefined;
      const metadata: Record<string, string> = {};
      res.headers.forEach((v, k) => {
        metadata[k] = v;
      });
      const typeOf = (d: Record<string, unknown>) => String(d["@type"]).split(".").pop()!;
      const retry = json.details?.find((d) => typeOf(d) === "RetryInfo");
      const quota = json.details?.find((d) => typeOf(d) === "QuotaFailure") as
        | { violations: { subject: string }[] }
        | undefined;
      return {
        answer: String(res.status),
        metadata,
        details: (json.details ?? []).map(typeOf),
        // protojson's Duration: "1.5s".
        retryDelayMs: Number.parseFloat(String(retry?.retryDelay ?? "-1")) * 1000,
        subject: quota?.violations[0]?.subject ?? "",
      };
    },
  };

  it("documents a row for every protocol", () => {
    expect([...documentedRows().keys()].sort()).toEqual(Object.keys(protocols).sort());
  });

  it("limits a call that reaches the interceptors without admission (Connect GET): fail closed", async () => {
    // Connect's GET (a NO_SIDE_EFFECTS method) has no body, so no path asks admission before
    // it: the interceptor charges the bucket itself.
    const caller = await ts.makeIdentity(org.uid, ["viewer"]);
    const client = createClient(
      AdvisoriesService,
      createConnectTransport({
        baseUrl: ts.url,
        httpVersion: "1.1",
        useHttpGet: true,
        interceptors: [withHeaders(caller.headers)],
      }),
    );
    for (let i = 0; i < 3; i++) await client.listAdvisories({});
    const seen = fromConnect(await client.listAdvisories({}).catch((e) => e));
    expect(seen.answer).toBe("RESOURCE_EXHAUSTED");
    expect(seen.subject).toBe(`identity:${caller.uid}`);
  });

  it.each(Object.keys(protocols))(
    "%s: the burst passes, the next call is refused as docs/api.md says, and the refill lets one through",
    async (name) => {
      const call = protocols[name]!;
      const row = documentedRows().get(name)!;
      const caller = await ts.makeIdentity(org.uid, ["viewer"]);
      // Burst 3: three calls at once pass; the fourth finds the bucket empty.
      for (let i = 0; i < 3; i++) expect(await call(caller), `call ${i + 1}`).toBeUndefined();
      const seen = await call(caller);
      expect(seen?.answer).toBe(row.answer);
      for (const header of row.metadata) expect(seen?.metadata, header).toHaveProperty(header);
      expect(seen?.details).toEqual(row.details);
      // 2 a minute: a token is back 30 s after the bucket ran dry.
      expect(seen?.retryDelayMs).toBe(period / 2);
      expect(seen?.metadata["retry-after"]).toBe("30");
      expect(seen?.metadata["ratelimit-policy"]).toBe('"api";q=2;w=60');
      expect(seen?.metadata.ratelimit).toBe('"api";r=0;t=30');
      expect(seen?.subject).toBe(`identity:${caller.uid}`);
      // Another identity has a bucket of its own.
      const other = await ts.makeIdentity(org.uid, ["viewer"]);
      expect(await call(other)).toBeUndefined();
      // 29.999 s later: still refused; at 30 s, one call passes, and the one after is refused.
      clock += period / 2 - 1;
      expect((await call(caller))?.answer).toBe(row.answer);
      clock += 1;
      expect(await call(caller)).toBeUndefined();
      expect((await call(caller))?.answer).toBe(row.answer);
    },
  );
});

/** A REST call's status and the headers a limit sets. */
async function rest(url: string, init: RequestInit = {}) {
  const res = await fetch(url, init);
  await res.arrayBuffer();
  return {
    status: res.status,
    retryAfter: res.headers.get("retry-after"),
    policy: res.headers.get("ratelimit-policy"),
    remaining: res.headers.get("ratelimit"),
  };
}

describe("without a valid token, per client address", () => {
  let org: TestOrg;
  const ts = useTestServer({ GATEHOUSE_RATE_LIMIT: "3/1m" }, { now: () => clock });
  beforeAll(async () => {
    org = await ts.makeOrg("anonymous");
  });

  it("limits a flood of bad tokens on every protocol, never health, and leaves identities their own buckets", async () => {
    const path = `${ts.url}/iam/v2beta1/groups/${org.uid}`;
    const bad = { authorization: "Bearer not.a.token" };
    // The address's three tokens: each bad-token call is told UNAUTHENTICATED while they last.
    expect((await rest(path, { headers: bad })).status).toBe(401);
    expect((await rest(path)).status).toBe(401);
    const connect = createClient(
      GroupsService,
      createConnectTransport({
        baseUrl: ts.url,
        httpVersion: "1.1",
        interceptors: [withHeaders(bad)],
      }),
    );
    await expect(connect.getGroup({ uid: org.uid })).rejects.toMatchObject({
      code: Code.Unauthenticated,
    });
    // Then RESOURCE_EXHAUSTED, on every protocol, keyed by the address.
    const limited = await rest(path, { headers: bad });
    expect(limited).toEqual({
      status: 429,
      retryAfter: "20",
      policy: '"api";q=3;w=60',
      remaining: '"api";r=0;t=20',
    });
    const err = fromConnect(await connect.getGroup({ uid: org.uid }).catch((e) => e));
    expect(err.answer).toBe("RESOURCE_EXHAUSTED");
    expect(err.subject).toBe("address:127.0.0.1");
    for (const transport of [
      createGrpcTransport({ baseUrl: ts.url }),
      createGrpcWebTransport({ baseUrl: ts.url, httpVersion: "1.1" }),
    ]) {
      const e = await createClient(GroupsService, transport)
        .getGroup({ uid: org.uid })
        .catch((x) => x);
      expect(fromConnect(e).answer).toBe("RESOURCE_EXHAUSTED");
      // Health is never limited, whatever the address's bucket holds.
      const health = await createClient(Health, transport).check({});
      expect(health.status).toBe(HealthCheckResponse_ServingStatus.SERVING);
    }
    for (const probe of ["/healthz", "/readyz"]) {
      expect((await rest(ts.url + probe)).status).toBe(200);
    }
    // A caller with a valid token, from the same address, has a bucket of its own.
    expect((await rest(path, { headers: org.owner.headers })).status).toBe(200);
  });
});

describe("organization overrides and the token endpoints' buckets", () => {
  const limitedOrg = newRootUid();
  const freeOrg = newRootUid();
  const ts = useTestServer(
    () => ({
      GATEHOUSE_RATE_LIMIT: "1/1m",
      GATEHOUSE_RATE_LIMIT_ORGS: `${limitedOrg}=1/1m:2, ${freeOrg}=off`,
      GATEHOUSE_STS_RATE_LIMIT: "2/1m",
      GATEHOUSE_LOGIN_RATE_LIMIT: "2/1m",
      GATEHOUSE_REGISTRY_TOKEN_RATE_LIMIT: "2/1m",
      GATEHOUSE_REGISTRY_AUDIENCE: "registry.test",
    }),
    { now: () => clock },
  );
  const orgOf = async (uid: string) => {
    const person = await ts.makeOrg("person");
    await ts.store.createOrganization(
      { uid, name: `org-${uid.slice(0, 6)}`, description: "", now: Date.now() },
      { bindingUid: newChildUid(uid), identityUid: person.owner.uid, roleUid: ownerRole.uid },
    );
    return ts.makeIdentity(uid, ["viewer"]);
  };

  it("gives an organization's identities its own rate, or none", async () => {
    const limited = await orgOf(limitedOrg);
    const free = await orgOf(freeOrg);
    const get = (org: string, caller: TestCaller) =>
      rest(`${ts.url}/iam/v2beta1/groups/${org}`, { headers: caller.headers });
    // The override's burst of 2, then 429 under its own policy name.
    expect((await get(limitedOrg, limited)).status).toBe(200);
    expect((await get(limitedOrg, limited)).status).toBe(200);
    expect(await get(limitedOrg, limited)).toMatchObject({
      status: 429,
      policy: `"org:${limitedOrg}";q=1;w=60`,
    });
    // `off`: never limited, far past the default's burst of 1.
    for (let i = 0; i < 5; i++) expect((await get(freeOrg, free)).status).toBe(200);
  });

  it.each([
    ["the STS exchange", "/sts/exchange?aud=x", "POST", 400, '"sts";q=2;w=60'],
    ["sign-in", "/oauth/token", "POST", 401, '"login";q=2;w=60'],
    [
      "the registry token endpoint",
      "/registry/token?service=registry.test",
      "GET",
      401,
      '"registry-token";q=2;w=60',
    ],
  ])("limits %s per client address", async (_name, path, method, refused, policy) => {
    const call = () =>
      rest(ts.url + path, {
        method,
        headers: {
          authorization: "Bearer not.a.token",
          "content-type": "application/x-www-form-urlencoded",
        },
        ...(method === "POST" ? { body: "grant_type=refresh_token&refresh_token=x" } : {}),
      });
    expect((await call()).status).toBe(refused);
    expect((await call()).status).toBe(refused);
    expect(await call()).toEqual({
      status: 429,
      retryAfter: "30",
      policy,
      remaining: policy.replace(/;q=.*/, ";r=0;t=30"),
    });
    clock += 30_000;
    expect((await call()).status).toBe(refused);
  });
});
