import { randomBytes } from "node:crypto";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { Config } from "../../config.js";
import { addressKey } from "../../rate-limit/client-address.js";
import { createTokenBuckets, type RatePolicy } from "../../rate-limit/token-buckets.js";
import type { NewRefreshToken } from "../../store/oauth-store.js";
import type { Store } from "../../store/store.js";
import { isUid } from "../../uid.js";
import type { DeviceTickets } from "./device-ticket.js";
import { cliClientId, type OAuthClients } from "./oauth-clients.js";
import { digest, escapeHtml, formOf, page, single, tokenError } from "./oauth-pages.js";
import { newUserCode, normalizeUserCode } from "./user-code.js";

/** The grant type of a device code at the token endpoint (RFC 8628 3.4). */
export const deviceCodeGrantType = "urn:ietf:params:oauth:grant-type:device_code";

/** A device code lives ten minutes, as a browser sign-in in flight does. */
export const deviceCodeLifetimeMs = 10 * 60_000;
/** The confirmation page's buttons work for five minutes after the sign-in. */
const ticketLifetimeMs = 5 * 60_000;

/** What the device flow needs from the authorization server it is part of (oauth-routes.ts). */
export interface DeviceRoutesDeps {
  /** The auth URL without a trailing slash, and its path. */
  authUrl: string;
  path: string;
  config: Pick<Config, "deviceCodeRateLimit" | "deviceCodeIntervalSeconds" | "loginIssuer">;
  store: Pick<
    Store,
    | "createDeviceCode"
    | "pendingDeviceCode"
    | "decideDeviceCode"
    | "pollDeviceCode"
    | "getIdentityProvider"
    | "recording"
  >;
  clients: OAuthClients;
  tickets: DeviceTickets;
  now: () => number;
  log: (fields: Record<string, unknown>, msg: string) => void;
  /**
   * Send the person's browser to `provider` ("" the login provider, else an IdP uid) to sign
   * in, as /oauth/authorize does; the callback then calls `confirmPage` for `userCode`.
   */
  startLogin(
    req: FastifyRequest,
    reply: FastifyReply,
    provider: string,
    userCode: string,
  ): Promise<FastifyReply>;
}

/** The parts of the device flow that the authorization code flow's endpoints call. */
export interface DeviceFlow {
  /** After a sign-in for `userCode`: the page where the person approves or denies it. */
  confirmPage(
    reply: FastifyReply,
    person: { uid: string; name: string; email: string },
    userCode: string,
  ): FastifyReply;
  /**
   * The token endpoint's answer to a poll: the session granted, or the RFC 8628 error
   * (`authorization_pending`, `slow_down`, `expired_token`, `access_denied`, `invalid_grant`).
   */
  poll(
    form: Record<string, string>,
    clientId: string,
    next: NewRefreshToken,
    scope: Parameters<Store["recording"]>[0],
  ): Promise<
    | { kind: "granted"; identityUid: string; sessionId: string }
    | { kind: "error"; error: string; description: string }
  >;
}

/**
 * Serve the OAuth 2.0 device authorization grant (RFC 8628) for the CLI's `auth login
 * --headless`: `POST /oauth/device_authorization` hands the client a device code and a user
 * code; the person opens `/oauth/device` on any device, types the code (entries rate-limited
 * per client address), signs in through the same provider as the browser flow and approves or
 * denies; the client polls `/oauth/token` with the device code. Codes are stored hashed,
 * decided once and redeemed once, on any replica.
 */
export function deviceRoutes(app: FastifyInstance, deps: DeviceRoutesDeps): DeviceFlow {
  const { authUrl, path, config, store, clients, tickets, now, log } = deps;
  const verificationUri = `${authUrl}/oauth/device`;
  const entries = createTokenBuckets(now);
  const entryPolicy: RatePolicy = {
    name: "device-code",
    count: config.deviceCodeRateLimit,
    periodMs: 60_000,
    burst: config.deviceCodeRateLimit,
  };

  app.post(`${path}/oauth/device_authorization`, async (req, reply) => {
    reply.header("cache-control", "no-store").header("pragma", "no-cache");
    const form = formOf(req.body);
    if (!form) {
      return tokenError(
        reply,
        "invalid_request",
        "send a form (application/x-www-form-urlencoded), each parameter once",
      );
    }
    const clientId = form.client_id ?? "";
    // The CLI only: the console signs in in the browser it runs in.
    if (!clients.known(clientId) || clientId !== cliClientId) {
      return tokenError(reply, "invalid_client", "unknown client_id", 401);
    }
    const provider = form.identity_provider ?? "";
    if (provider === "" && config.loginIssuer === "") {
      return tokenError(
        reply,
        "invalid_request",
        "this server has no login provider: name an organization's identity_provider",
      );
    }
    if (provider !== "" && !(isUid(provider) && (await store.getIdentityProvider(provider)))) {
      return tokenError(reply, "invalid_request", "no such identity provider");
    }
    const deviceCode = randomBytes(32).toString("base64url");
    const t = now();
    // A user code is drawn again in the rare case that a live one already has it.
    for (let attempt = 0; attempt < 5; attempt++) {
      const userCode = newUserCode();
      const created = await store.createDeviceCode({
        deviceCodeHash: digest(deviceCode),
        userCodeHash: digest(userCode),
        clientId,
        provider,
        intervalMs: config.deviceCodeIntervalSeconds * 1000,
        expireTime: t + deviceCodeLifetimeMs,
        now: t,
      });
      if (!created) continue;
      return reply.type("application/json").send({
        device_code: deviceCode,
        user_code: userCode,
        verification_uri: verificationUri,
        verification_uri_complete: `${verificationUri}?user_code=${userCode}`,
        expires_in: deviceCodeLifetimeMs / 1000,
        interval: config.deviceCodeIntervalSeconds,
      });
    }
    throw new Error("no free user code in 5 draws");
  });

  // The verification page: a form for the code, filled in from verification_uri_complete.
  // Even then the person presses Continue: a link alone never starts a sign-in (RFC 8628 5.4).
  app.get(`${path}/oauth/device`, async (req, reply) => {
    const q = single(req.query as Record<string, unknown>) ?? {};
    const typed = q.user_code === undefined ? "" : (normalizeUserCode(q.user_code) ?? "");
    return entryPage(reply, 200, typed, "");
  });

  app.post(`${path}/oauth/device`, async (req, reply) => {
    const form = formOf(req.body);
    const typed = form?.user_code ?? "";
    // Every entry counts, right or wrong: a guesser cannot tell which would have.
    const waitMs = entries.take(addressKey(req.ip), entryPolicy);
    if (waitMs > 0) {
      const seconds = Math.ceil(waitMs / 1000);
      log({ reason: "rate_limited" }, "device code entry refused");
      reply.header("retry-after", String(seconds));
      return entryPage(
        reply,
        429,
        "",
        `Too many codes entered from this address: try again in ${seconds} seconds.`,
      );
    }
    const userCode = normalizeUserCode(typed);
    const pending = userCode && (await store.pendingDeviceCode(digest(userCode), now()));
    if (!userCode || !pending) {
      log({ reason: "unknown_user_code" }, "device code entry refused");
      return entryPage(
        reply,
        400,
        "",
        "That code is unknown, expired or already used. Check the code your device shows.",
      );
    }
    return deps.startLogin(req, reply, pending.provider, userCode);
  });

  app.post(`${path}/oauth/device/confirm`, async (req, reply) => {
    const form = formOf(req.body);
    const ticket = form?.ticket ? tickets.open(form.ticket) : undefined;
    const decision = form?.decision;
    if (!ticket || ticket.expireTime <= now() || (decision !== "approve" && decision !== "deny")) {
      return page(
        reply,
        400,
        "Sign-in not confirmed",
        "<p>This confirmation is unknown or has expired. Enter the code again.</p>",
      );
    }
    const approve = decision === "approve";
    const decided = await store.decideDeviceCode(
      digest(ticket.userCode),
      now(),
      approve ? ticket.identityUid : null,
    );
    if (!decided) {
      return page(
        reply,
        400,
        "Sign-in not confirmed",
        "<p>This code has expired, or was already approved or denied.</p>",
      );
    }
    log({ identity: ticket.identityUid, decision }, "device code decided");
    return approve
      ? page(
          reply,
          200,
          "Device signed in",
          "<p>Done: return to your device. You may close this page.</p>",
        )
      : page(
          reply,
          200,
          "Sign-in denied",
          "<p>The device was not signed in. You may close this page.</p>",
        );
  });

  function entryPage(reply: FastifyReply, status: number, userCode: string, error: string) {
    return page(
      reply,
      status,
      "Sign in a device",
      `${error === "" ? "" : `<p role="alert">${escapeHtml(error)}</p>`}` +
        `<form method="post" action="${escapeHtml(`${path}/oauth/device`)}">` +
        `<p><label for="user_code">Enter the code your device shows</label></p>` +
        `<p><input id="user_code" name="user_code" value="${escapeHtml(userCode)}" ` +
        `autocomplete="off" autocapitalize="characters" spellcheck="false" maxlength="64" required>` +
        ` <button type="submit">Continue</button></p></form>`,
      // A right code is answered with a redirect to the identity provider.
      true,
    );
  }

  return {
    confirmPage(reply, person, userCode) {
      const ticket = tickets.seal({
        userCode,
        identityUid: person.uid,
        expireTime: now() + ticketLifetimeMs,
      });
      const who = `${person.name}${person.email === "" ? "" : ` <${person.email}>`}`;
      return page(
        reply,
        200,
        "Sign in a device?",
        `<p>You are signed in as <strong>${escapeHtml(who)}</strong>.</p>` +
          `<p>A device showing the code <code>${escapeHtml(userCode)}</code> asks to act as you ` +
          `with the Gatehouse command line. Approve only if you started this sign-in yourself ` +
          `and your device shows this code.</p>` +
          `<form method="post" action="${escapeHtml(`${path}/oauth/device/confirm`)}">` +
          `<input type="hidden" name="ticket" value="${escapeHtml(ticket)}">` +
          `<button type="submit" name="decision" value="approve">Approve</button> ` +
          `<button type="submit" name="decision" value="deny">Deny</button></form>`,
      );
    },

    async poll(form, clientId, next, scope) {
      const deviceCode = form.device_code;
      if (!deviceCode) {
        return { kind: "error", error: "invalid_request", description: "device_code is required" };
      }
      const outcome = await store
        .recording(scope)
        .pollDeviceCode(digest(deviceCode), clientId, now(), {
          sessionId: randomBytes(16).toString("base64url"),
          refresh: next,
        });
      switch (outcome.kind) {
        case "granted":
          return outcome;
        case "pending":
          return {
            kind: "error",
            error: "authorization_pending",
            description: "the person has not approved the code yet",
          };
        case "slow_down":
          return {
            kind: "error",
            error: "slow_down",
            description: `polled too often: wait ${outcome.intervalMs / 1000} s between polls`,
          };
        case "denied":
          return {
            kind: "error",
            error: "access_denied",
            description: "the person denied the code",
          };
        case "expired":
          return {
            kind: "error",
            error: "expired_token",
            description: "the device code has expired: start the sign-in again",
          };
        case "invalid":
          log({ clientId, grant: "device_code", reason: "invalid" }, "token request refused");
          return {
            kind: "error",
            error: "invalid_grant",
            description: "the device code is unknown or was already used",
          };
      }
    },
  };
}
