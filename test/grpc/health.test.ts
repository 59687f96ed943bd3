import type { ClientReadableStream } from "@grpc/grpc-js";
import Fastify, { type FastifyInstance } from "fastify";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { healthRoutes } from "../../src/grpc/health-routes.js";
import { grpcJsClient, type H2cServer, startH2cServer, unary } from "./h2c-server.js";

type Watch = ClientReadableStream<{ status: string }>;

let srv: H2cServer;
let health: ReturnType<typeof grpcJsClient>;

beforeAll(async () => {
  srv = await startH2cServer();
  health = grpcJsClient(srv.port, "grpc/health/v1/health.proto", "grpc.health.v1.Health");
});

afterAll(async () => {
  health?.close();
  await srv?.close();
});

afterEach(() => srv.setHealthy(true));

describe("grpc.health.v1.Health with grpc-js", () => {
  it.each(["", "gatehouse.iam.v2beta1.GroupsService"])("Check(%j) is SERVING", async (service) => {
    expect(await unary(health, "Check", { service })).toEqual({ status: "SERVING" });
  });

  it("Check is NOT_SERVING while the check fails", async () => {
    srv.setHealthy(false);
    expect(await unary(health, "Check", { service: "" })).toEqual({ status: "NOT_SERVING" });
  });

  it("Check of an unknown service fails NOT_FOUND", async () => {
    await expect(unary(health, "Check", { service: "no.Such" })).rejects.toMatchObject({ code: 5 });
  });

  it("Watch sends the status, then each change, until cancelled", async () => {
    const call: Watch = health.Watch({ service: "" });
    const seen: string[] = [];
    const ended = new Promise<unknown>((resolve) => call.on("status", resolve));
    await new Promise<void>((resolve, reject) => {
      call.on("error", (e) => (e as { code?: number }).code === 1 || reject(e));
      call.on("data", (r) => {
        seen.push(r.status);
        if (seen.length === 1) srv.setHealthy(false);
        if (seen.length === 2) srv.setHealthy(true);
        if (seen.length === 3) resolve();
      });
    });
    call.cancel();
    expect(seen).toEqual(["SERVING", "NOT_SERVING", "SERVING"]);
    expect(await ended).toMatchObject({ code: 1 });
  });

  it("Watch of an unknown service reports SERVICE_UNKNOWN and stays open", async () => {
    const call: Watch = health.Watch({ service: "no.Such" });
    call.on("error", () => undefined);
    const first = await new Promise<{ status: string }>((resolve) => call.once("data", resolve));
    expect(first.status).toBe("SERVICE_UNKNOWN");
    call.cancel();
  });
});

describe("HTTP probes over HTTP/1.1", () => {
  let app: FastifyInstance;
  let url: string;
  let ready = true;

  beforeAll(async () => {
    app = Fastify();
    await app.register(healthRoutes, { check: async () => ready });
    url = await app.listen({ host: "127.0.0.1", port: 0 });
  });

  afterAll(() => app?.close());

  it("GET /healthz is 200 while the process is up, ready or not", async () => {
    ready = false;
    const res = await fetch(`${url}/healthz`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ status: "SERVING" });
  });

  it.each([
    [true, 200, "SERVING"],
    [false, 503, "NOT_SERVING"],
  ])("GET /readyz with check() %s is %i", async (ok, code, status) => {
    ready = ok;
    const res = await fetch(`${url}/readyz`);
    expect(res.status).toBe(code);
    expect(await res.json()).toEqual({ status });
  });
});
