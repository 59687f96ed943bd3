#!/usr/bin/env node
// Container health check: GET /readyz on this server's own port, over https when
// GATEHOUSE_TLS_CERT is set (the certificate is not checked: only this process is asked).
// Exit 0 when ready, 1 otherwise.
import http from "node:http";
import https from "node:https";

const tls = Boolean(process.env.GATEHOUSE_TLS_CERT);
const port = Number(process.env.GATEHOUSE_PORT || 8080);
const client = tls ? https : http;
const req = client.get(
  { host: "127.0.0.1", port, path: "/readyz", timeout: 2500, rejectUnauthorized: false },
  (res) => {
    res.resume();
    process.exit(res.statusCode === 200 ? 0 : 1);
  },
);
req.on("timeout", () => req.destroy());
req.on("error", () => process.exit(1));
