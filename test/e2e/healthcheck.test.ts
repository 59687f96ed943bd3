import { spawn } from "node:child_process";
import { afterAll, beforeAll, expect, it } from "vitest";
import {
  freePort,
  startTestServer,
  type TestServer,
  useTestServer,
} from "../helpers/test-server.js";

// The container's HEALTHCHECK: bin/healthcheck.js asks /readyz over http, or https with TLS.

let tls: TestServer;
const plain = useTestServer();
beforeAll(async () => {
  tls = await startTestServer({
    GATEHOUSE_TLS_CERT: "test/fixtures/tls/cert.pem",
    GATEHOUSE_TLS_KEY: "test/fixtures/tls/key.pem",
  });
});
afterAll(async () => {
  await tls?.close();
});

// Not spawnSync: the servers run in this process and must answer meanwhile.
const check = (env: Record<string, string>) =>
  new Promise<number | null>((resolve) => {
    const child = spawn(process.execPath, ["bin/healthcheck.js"], {
      env: { PATH: process.env.PATH ?? "", ...env },
      stdio: "ignore",
    });
    child.on("exit", (code) => resolve(code));
  });

it("passes against a ready server over http, and over https with TLS on", async () => {
  expect(await check({ GATEHOUSE_PORT: String(plain.port) })).toBe(0);
  const cert = "test/fixtures/tls/cert.pem";
  expect(await check({ GATEHOUSE_PORT: String(tls.port), GATEHOUSE_TLS_CERT: cert })).toBe(0);
  // Plain http against the TLS port does not pass: the check follows the setting.
  expect(await check({ GATEHOUSE_PORT: String(tls.port) })).toBe(1);
});

it("fails when nothing answers", async () => {
  expect(await check({ GATEHOUSE_PORT: String(await freePort()) })).toBe(1);
});
