/**
 * GetGroup on the three ways in, as the setting A/B benches load a pair of servers
 * (bench/setting-ab.ts): the lean unary Connect path (Connect over HTTP/1.1), the lean unary
 * gRPC path (grpc-js over HTTP/2) and REST through the gateway, each a closed loop of
 * `inFlight` calls with the target's token.
 */
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { GroupsService } from "../gen/gatehouse/iam/v2beta1/groups_pb.js";
import { grpcCaller } from "./groups-proto.js";
import { type AbLoad, type AbTarget, closedLoop } from "./setting-ab.js";

/** A client per target, made on its first round. */
function perTarget<C>(make: (t: AbTarget) => C): (t: AbTarget) => C {
  const made = new Map<AbTarget, C>();
  return (t) => {
    const c = made.get(t) ?? make(t);
    made.set(t, c);
    return c;
  };
}

/** A Groups client over Connect (HTTP/1.1) to `t`, with its token. */
export function groupsClient(t: AbTarget) {
  return createClient(
    GroupsService,
    createConnectTransport({
      baseUrl: `http://127.0.0.1:${t.port}`,
      httpVersion: "1.1",
      interceptors: [
        (next) => (req) => {
          req.header.set("authorization", `Bearer ${t.token}`);
          return next(req);
        },
      ],
    }),
  );
}

/** The three GetGroup loads, labelled, and `close` for the gRPC clients they made. */
export function getGroupLoads(inFlight: number): {
  loads: [string, AbLoad][];
  close(targets: readonly AbTarget[]): void;
} {
  const connect = perTarget(groupsClient);
  const grpc = perTarget((t) =>
    grpcCaller(t.port, { authorization: `Bearer ${t.token}` }, t.group),
  );
  return {
    loads: [
      [
        "GetGroup, Connect (lean unary path)",
        (t, until) => closedLoop(inFlight, until, () => connect(t).getGroup({ uid: t.group })),
      ],
      [
        "GetGroup, gRPC (grpc-js, lean unary path)",
        (t, until) => closedLoop(inFlight, until, grpc(t).send),
      ],
      [
        "GetGroup, REST (gateway)",
        (t, until) =>
          closedLoop(inFlight, until, async () => {
            const res = await fetch(`http://127.0.0.1:${t.port}/iam/v2beta1/groups/${t.group}`, {
              headers: { authorization: `Bearer ${t.token}` },
            });
            if (res.status !== 200) throw new Error(`GetGroup answered ${res.status}`);
            await res.arrayBuffer();
          }),
      ],
    ],
    close(targets) {
      for (const t of targets) grpc(t).close();
    },
  };
}
