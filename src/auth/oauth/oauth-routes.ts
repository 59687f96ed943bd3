import { createHash, randomBytes } from "node:crypto";
import { resolveTxt } from "node:dns/promises";
import rateLimit from "@fastify/rate-limit";
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from "fastify";
import type { Config } from "../../config.js";
import { changeScope, signInScope } from "../../events/audit-scope.js";
import { startPeriodic } from "../../periodic-job.js";
import { directoryRefusal, refusalMessage } from "../../scim/scim-standing.js";
import type { IdentityProviderRecord } from "../../store/iam-store.js";
import type { Store } from "../../store/store.js";
import { isUid, rootOf } from "../../uid.js";
import { grantDefaultRole } from "../login/default-role.js";
import { personLogin, verifiedEmail } from "../login/person.js";
import { createSignInLimit } from "../login/sign-in-limit.js";
import { syncTeams } from "../login/team-sync.js";
import {
  callbackUri,
  type LoginProvider,
  type Upstream,
  UpstreamError,
} from "../login/upstream.js";
import type { TokenIssuer, TokenVerifier } from "../tokens.js";
import { deviceCodeGrantType, deviceRoutes } from "./device-routes.js";
import { createDeviceTickets } from "./device-ticket.js";
import { createDomainVerification } from "./domain-verification.js";
import { cookieValue, createLoginCookies, type PendingLogin } from "./login-cookie.js";
import { createLoginSlots, loginCookieName } from "./login-slots.js";
import { cliClientId, createOAuthClients, type OAuthClients } from "./oauth-clients.js";
import { digest, errorPage, formOf, single, tokenError } from "./oauth-pages.js";
import { createSignInPurge } from "./sign-in-purge.js";

/** Options of oauthRoutes. */
export interface OAuthRoutesOptions {
  config: Config;
  store: Store;
  tokens: Pick<TokenIssuer, "issue">;
  verifier: Pick<TokenVerifier, "verify">;
  upstream: Upstream;
  now: () => number;
  /** Told what was refused and why: reasons and uids, never a code or a token. */
  log: (fields: Record<string, unknown>, msg: string) => void;
  /** Told of a failure of the server itself (a database error), with its cause. */
  logError: (fields: Record<string, unknown>, msg: string) => void;
  /**
   * Told how each sign-in coming back from an identity provider ended (for metrics): a code
   * issued, refused (the provider's or our refusal, a rate limit, an unknown or spent login),
   * or an error of the server itself.
   */
  onLogin?: (outcome: "issued" | "refused" | "error") => void;
  /** The TXT records of a DNS name, for the verification of domain claims; default node:dns. */
  resolveTxt?: (name: string) => Promise<string[][]>;
}

/** How often the DNS verification of domain claims runs. */
const domainVerificationIntervalMs = 60_000;

/** Event types of the sign-in endpoints' changes (the callback's: signInScope). */
const codeRedeemedType = "dev.gatehouse.auth.authorization_code.redeemed.v1";
const refreshedType = "dev.gatehouse.auth.refresh_token.rotated.v1";
const deviceRedeemedType = "dev.gatehouse.auth.device_code.redeemed.v1";
const signedOutType = "dev.gatehouse.auth.person.signed_out.v1";
/** A code or refresh token used twice revokes its session: recorded as such. */
const replayRevokes = { replayed: "dev.gatehouse.auth.session.revoked.v1" } as const;
/** The token endpoint as its events' source (as the callback's is `/oauth/callback`). */
const tokenSource = "/oauth/token";

/** A code is redeemed within a minute or never. */
const codeLifetimeMs = 60_000;
/** A person has ten minutes to sign in at the identity provider. */
const loginLifetimeMs = 10 * 60_000;
/** The form of a token or revocation request is small; anything larger is not one. */
const formLimit = 16 * 1024;
/**
 * The longest client state and redirect URI kept for a login in flight: enough for any real
 * client (the CLI's are under 100 characters). These bound what is read; what decides is the
 * sealed login's size (maxCookieBytes): characters that JSON escapes or UTF-8 widens can make
 * a state within these limits too large for a cookie.
 */
const maxStateLength = 512;
const maxRedirectUriLength = 1024;
/** Browsers keep at most 4,096 bytes of a cookie's name and value, and drop larger ones unsaid. */
const maxCookieBytes = 4096;

/**
 * Serve Gatehouse's own OAuth 2.0 authorization server under the auth URL, for people:
 * `/oauth/authorize` (authorization code with PKCE S256, public clients only) sends the browser
 * to the login provider, `/oauth/callback` takes its answer back and redirects to the client
 * with a one-time code, `/oauth/token` trades the code, or a refresh token, for an API token and
 * a new refresh token, and `/oauth/revoke` ends a session.
 */
export const oauthRoutes: FastifyPluginAsync<OAuthRoutesOptions> = async (app, opts) => {
  const { config, store, upstream, now, log } = opts;
  const authUrl = config.authUrl.replace(/\/$/, "");
  const path = new URL(authUrl).pathname.replace(/\/$/, "");
  const clients: OAuthClients = createOAuthClients({ baseUrl: config.baseUrl });
  const refreshTtlMs = config.refreshTokenTtlSeconds * 1000;
  // Logins in flight live in the browser (login-cookie.ts), sealed under a key every replica
  // shares.
  const loginCookies = createLoginCookies(
    await store.getOrCreateSecret("login-cookie-key", () => randomBytes(32)),
  );
  // The login provider's callback, and the prefix of organization providers' (callbackUri).
  const callbackPath = `${path}/oauth/callback`;
  const idpCallbackPath = `${path}/oauth/idp-callback`;
  const secureCookies = authUrl.startsWith("https:");
  // A browser's one login cookie (login-slots.ts) goes to authorize, which adds to it, and to
  // the callback, which takes from it.
  const slots = createLoginSlots(loginCookies, maxCookieBytes - loginCookieName.length - 1);
  // The Set-Cookie header of the login cookie; a max age of 0 clears it.
  const loginSetCookie = (value: string, maxAgeSeconds: number) =>
    `${loginCookieName}=${value}; Path=${path}/oauth/; Max-Age=${maxAgeSeconds}; HttpOnly; SameSite=Lax${secureCookies ? "; Secure" : ""}`;
  // Sign-ins per organization provider, and the purge of what sign-ins leave behind.
  const signIns = createSignInLimit(config.signInRateLimit, now);
  const purge = createSignInPurge({
    store,
    now,
    log,
    idlePersonRetentionMs: config.idlePersonRetentionSeconds * 1000,
  });
  const stopPurge = startPeriodic(purge, config.signInPurgeIntervalSeconds * 1000, (err) =>
    log({ err }, "sign-in purge failed"),
  );
  // Domain claims verified by their DNS (domain-verification.ts): the sign-in lookup puts
  // them first, and the console follows one by itself.
  const verification = createDomainVerification({
    store,
    resolveTxt: opts.resolveTxt ?? resolveTxt,
    now,
    log,
  });
  const stopVerification = startPeriodic(verification, domainVerificationIntervalMs, (err) =>
    log({ err }, "domain verification failed"),
  );
  app.addHook("onClose", async () => {
    stopPurge();
    stopVerification();
  });
  // Authorize, per client address: each hands out a sealed login to anyone. 429 with
  // Retry-After beyond.
  await app.register(rateLimit, { global: false });
  const perAddress = {
    config: { rateLimit: { max: config.oauthRateLimit, timeWindow: 60_000 } },
  };
  // Callbacks of a login in flight, per client address as authorize: each costs a request at
  // the provider. Counted only once the login is known, so that forged callbacks a page makes
  // a person's browser send (or anyone sends from many addresses) spend nothing of the
  // address's quota: they cost a cookie's unsealing and are refused.
  const callbacks = createSignInLimit(config.oauthRateLimit, now);

  // The issuers whose word on an email is believed for an organization's provider.
  const emailTrusted = new Set(
    [config.loginIssuer, ...config.trustedUserIssuers].filter((i) => i !== ""),
  );

  // A failure of the server itself (a database that refuses a value, is down...) is logged
  // with its cause and answered plainly; the browser learns nothing of the cause.
  app.setErrorHandler((err: { statusCode?: number; code?: string }, req, reply) => {
    const status = err.statusCode ?? 500;
    if (status >= 400 && status < 500) {
      return reply
        .code(status)
        .type("application/json")
        .send({ error: "invalid_request", error_description: String((err as Error).message) });
    }
    opts.logError({ err, url: req.url.split("?", 1)[0] }, "sign-in request failed");
    if (req.url.startsWith(callbackPath) || req.url.startsWith(idpCallbackPath)) {
      opts.onLogin?.("error");
    }
    // The token and revocation endpoints answer clients, in RFC 6749's form; the others, people.
    if (req.method === "POST") {
      return tokenError(reply, "server_error", "the server failed to complete this request", 500);
    }
    return errorPage(reply, 500, "The server failed to complete this request. Try again later.");
  });

  app.addContentTypeParser(
    "application/x-www-form-urlencoded",
    { parseAs: "string", bodyLimit: formLimit },
    (_req, body, done) => done(null, new URLSearchParams(body as string)),
  );

  async function providerFor(
    id: string,
  ): Promise<{ provider: LoginProvider; idp?: IdentityProviderRecord } | undefined> {
    if (id === "") {
      if (config.loginIssuer === "") return undefined;
      return {
        provider: {
          id: "",
          issuer: config.loginIssuer,
          clientId: config.loginClientId,
          clientSecret: config.loginClientSecret,
          scopes: [],
        },
      };
    }
    const idp = isUid(id) ? await store.getIdentityProvider(id) : undefined;
    if (!idp) return undefined;
    const { issuer, clientId, clientSecret, additionalScopes } = idp.oidc;
    return { provider: { id, issuer, clientId, clientSecret, scopes: additionalScopes }, idp };
  }

  app.get(`${path}/oauth/authorize`, perAddress, async (req, reply) => {
    const q = single(req.query as Record<string, unknown>);
    if (q === undefined) return errorPage(reply, 400, "A parameter is given more than once.");
    const clientId = q.client_id ?? "";
    const redirectUri = q.redirect_uri ?? "";
    // The client and its redirect are checked before anything else: until they are, an error
    // is shown here, never redirected (no open redirect).
    if (clientId === "") return errorPage(reply, 400, "client_id is required.");
    if (!clients.known(clientId)) {
      return errorPage(reply, 400, `Unknown client_id ${JSON.stringify(clientId.slice(0, 100))}.`);
    }
    if (redirectUri.length > maxRedirectUriLength) {
      return errorPage(
        reply,
        400,
        `redirect_uri is too long (at most ${maxRedirectUriLength} characters).`,
      );
    }
    if (!clients.redirectAllowed(clientId, redirectUri)) {
      log({ clientId, reason: "redirect_uri_refused" }, "authorization refused");
      return errorPage(reply, 400, "This redirect_uri is not allowed for this client.");
    }
    const clientState = q.state ?? "";
    // A page, not a redirect: the client could not match an answer without its state.
    if (clientState.length > maxStateLength) {
      return errorPage(reply, 400, `state is too long (at most ${maxStateLength} characters).`);
    }
    const back = (error: string, description: string) =>
      redirectWith(reply, redirectUri, {
        error,
        error_description: description,
        ...(clientState === "" ? {} : { state: clientState }),
        iss: authUrl,
      });
    if (q.response_type !== "code") {
      return back("unsupported_response_type", "response_type must be code");
    }
    const challenge = q.code_challenge ?? "";
    if (q.code_challenge_method !== "S256" || !/^[A-Za-z0-9_-]{43}$/.test(challenge)) {
      return back(
        "invalid_request",
        "PKCE is required: code_challenge_method=S256 and a code_challenge",
      );
    }
    return startLogin(req, reply, q.identity_provider ?? "", back, {
      clientId,
      redirectUri,
      codeChallenge: challenge,
      clientState,
    });
  });

  /**
   * Send the browser to the identity provider `providerId` ("" the login provider) with a new
   * sealed login in its login cookie; `back` answers an unknown or unavailable provider.
   */
  async function startLogin(
    req: FastifyRequest,
    reply: FastifyReply,
    providerId: string,
    back: (error: string, description: string) => FastifyReply,
    downstream: Pick<
      PendingLogin,
      "clientId" | "redirectUri" | "codeChallenge" | "clientState" | "deviceUserCode"
    >,
  ): Promise<FastifyReply> {
    const found = await providerFor(providerId);
    if (!found) {
      return back(
        "invalid_request",
        providerId
          ? "no such identity provider"
          : "this server has no login provider: name an organization's identity_provider",
      );
    }
    let start: Awaited<ReturnType<Upstream["start"]>>;
    try {
      start = await upstream.start(found.provider);
    } catch (err) {
      if (!(err instanceof UpstreamError)) throw err;
      log({ provider: found.provider.id, detail: err.detail }, "login provider unavailable");
      return back("temporarily_unavailable", err.reason);
    }
    const stateHash = digest(start.state);
    const sealed = loginCookies.seal(stateHash, {
      ...downstream,
      provider: found.provider.id,
      nonce: start.nonce,
      codeVerifier: start.codeVerifier,
      expireTime: now() + loginLifetimeMs,
    });
    // A cookie the browser would drop would end the sign-in at the callback, after the person
    // signed in at the provider: refuse it here instead. Name and value are ASCII.
    if (loginCookieName.length + 1 + sealed.length > maxCookieBytes) {
      return errorPage(reply, 400, "state and redirect_uri are too long to keep for the sign-in.");
    }
    // One cookie per browser: this login first, then the older ones that still fit.
    const value = slots.add(cookieValue(req.headers.cookie, loginCookieName), sealed);
    return reply
      .header("cache-control", "no-store")
      .header("set-cookie", loginSetCookie(value, loginLifetimeMs / 1000))
      .redirect(start.url.href, 302);
  }

  // The device flow (RFC 8628): its sign-ins go through startLogin and the callback below.
  const device = deviceRoutes(app, {
    authUrl,
    path,
    config,
    store,
    clients,
    tickets: createDeviceTickets(
      await store.getOrCreateSecret("device-ticket-key", () => randomBytes(32)),
    ),
    now,
    log,
    startLogin: (req, reply, provider, userCode) =>
      startLogin(
        req,
        reply,
        provider,
        (_error, description) => errorPage(reply, 400, description),
        {
          clientId: cliClientId,
          redirectUri: "",
          codeChallenge: "",
          clientState: "",
          deviceUserCode: userCode,
        },
      ),
  });

  // The login provider's answers come to callbackPath, an organization provider's to
  // `idpCallbackPath/{uid}` (callbackUri): each answer is taken only at the callback of the
  // provider its login was sent to. Nothing is served under callbackPath: a login provider
  // that accepts sub-paths of its redirect URI has no organization's callback there to send
  // its code to.
  app.get(callbackPath, (req, reply) => callback(req, reply, ""));
  app.get(`${idpCallbackPath}/*`, (req, reply) => {
    const uid = (req.params as { "*": string })["*"];
    // Never the login provider's ("").
    if (!isUid(uid)) return errorPage(reply, 404, "No such identity provider callback.");
    return callback(req, reply, uid);
  });

  async function callback(req: FastifyRequest, reply: FastifyReply, at: string) {
    const q = single(req.query as Record<string, unknown>);
    const state = q?.state ?? "";
    const stateHash = state === "" ? "" : digest(state);
    const taken =
      stateHash === ""
        ? undefined
        : slots.take(cookieValue(req.headers.cookie, loginCookieName), stateHash);
    const pending = taken && taken.login.expireTime > now() ? taken.login : undefined;
    // A login in flight is counted against its address (before it is taken out of the cookie:
    // a person told to wait can come back); an unknown one costs nothing and is refused below.
    if (q && pending && !callbacks.take(req.ip)) {
      const seconds = Math.ceil(callbacks.retryAfterMs() / 1000);
      log({ provider: pending.provider, reason: "rate_limited" }, "login callback refused");
      opts.onLogin?.("refused");
      reply.code(429).header("retry-after", String(seconds));
      return errorPage(
        reply,
        429,
        `Too many sign-ins from this address: try again in ${seconds} seconds.`,
      );
    }
    // The login is over either way: it leaves the cookie, which keeps the other tabs' logins.
    if (taken !== undefined) {
      reply.header(
        "set-cookie",
        taken.rest === ""
          ? loginSetCookie("", 0)
          : loginSetCookie(taken.rest, loginLifetimeMs / 1000),
      );
    }
    const unknown = (reason: string) => {
      log({ reason }, "login callback refused");
      opts.onLogin?.("refused");
      return errorPage(
        reply,
        400,
        "This sign-in is unknown, expired or already complete (or newer sign-ins in this browser replaced it). Start the sign-in again.",
      );
    };
    if (!q || !pending) return unknown("unknown_state");
    // A sealed login is redeemed once, on every replica: a replayed callback never reaches
    // the provider (each would spend a token request of Gatehouse's there).
    if (!(await store.spendLogin(stateHash, pending.expireTime))) return unknown("login_spent");
    // A device flow's sign-in has no client to send back to: the person reads the answer.
    const back = (params: Record<string, string>) =>
      pending.deviceUserCode !== undefined
        ? errorPage(reply, 400, params.error_description ?? params.error ?? "refused")
        : redirectWith(reply, pending.redirectUri, {
            ...params,
            ...(pending.clientState === "" ? {} : { state: pending.clientState }),
            iss: authUrl,
          });
    const refuse = (reason: string, description: string, detail?: string) => {
      log({ provider: pending.provider, reason, ...(detail ? { detail } : {}) }, "login refused");
      opts.onLogin?.("refused");
      return back({ error: "access_denied", error_description: description });
    };
    // An answer at another provider's callback is a mix-up: a provider relaying the browser
    // to another (or an attacker replaying another's answer) must not have it redeemed here.
    if (at !== pending.provider) {
      return refuse("wrong_callback", "the answer came back for another identity provider");
    }
    const found = await providerFor(pending.provider);
    if (!found) return refuse("provider_gone", "the identity provider no longer exists");
    const callbackUrl = new URL(callbackUri(authUrl, pending.provider));
    for (const [k, v] of Object.entries(q)) callbackUrl.searchParams.set(k, v);
    let claims: Awaited<ReturnType<Upstream["finish"]>>;
    try {
      claims = await upstream.finish(found.provider, callbackUrl, {
        state,
        nonce: pending.nonce,
        codeVerifier: pending.codeVerifier,
      });
    } catch (err) {
      if (!(err instanceof UpstreamError)) throw err;
      return refuse(err.providerError ?? "upstream_refused", err.reason, err.detail);
    }
    if (config.loginRequireVerifiedEmail && verifiedEmail(claims) === "") {
      return refuse("no_verified_email", "a verified email address is required to sign in");
    }
    // Through an organization's provider, a person of that provider's own (providerPersonUid):
    // never someone who signs in elsewhere, whatever its ID tokens claim.
    const scope = found.idp && {
      uid: found.idp.uid,
      trustEmail: emailTrusted.has(found.idp.oidc.issuer),
    };
    // Each sign-in leaves rows (a person, a session, a code): an organization's provider
    // makes at most signInRateLimit a minute.
    if (found.idp && !signIns.take(found.idp.uid)) {
      const seconds = Math.ceil(signIns.retryAfterMs() / 1000);
      log({ provider: pending.provider, reason: "rate_limited" }, "login refused");
      opts.onLogin?.("refused");
      return back({
        error: "temporarily_unavailable",
        error_description: `too many sign-ins through this identity provider: try again in ${seconds} s`,
      });
    }
    const login = personLogin(claims, now(), scope);
    if (found.idp) {
      // The organization's directory is the source of truth: a person its SCIM connection
      // deactivated or deleted gets nothing through its provider (no session, default role
      // or team), whatever the provider still says; the refusal is the owners' to see.
      const refusal = await directoryRefusal(store, rootOf(found.idp.uid), {
        identityUid: login.uid,
        externalId: claims.sub,
        email: login.email,
        account: { issuer: login.issuer, subject: login.subject },
      });
      if (refusal) {
        await store
          .recording(
            changeScope({
              type: "dev.gatehouse.scim.sign_in.refused.v1",
              source: "/oauth/callback",
              requestId: req.id,
              actorUid: login.uid,
              reason: refusal === "inactive" ? "scim_inactive" : "scim_deleted",
              via: { identityProviderUid: found.idp.uid, identityProviderName: found.idp.name },
            }),
          )
          .recordChange(found.idp.uid);
        return refuse(`scim_${refusal}`, refusalMessage(refusal));
      }
    }
    const created = !(await store.identityExists(login.uid));
    // The sign-in is in the audit trail: the person's record is written with its event.
    // Through an organization's provider, the sign-in is that organization's owners' to see.
    const through = found.idp && {
      identityProviderUid: found.idp.uid,
      identityProviderName: found.idp.name,
    };
    const person = await store
      .recording(signInScope(req.id, through || undefined))
      .upsertPerson(login);
    // Until the client redeems the code, the sign-in is unfinished: the purge deletes people
    // a sign-in made who never finish one (sign-in-purge.ts).
    await store.noteUnfinishedSignIn(person.uid, created, login.now);
    if (found.idp) {
      // One of the organization's people from now on, bound or not (the people view).
      const { uid, groupUid } = found.idp;
      await store.notePersonOrigin(person.uid, {
        kind: "identity_provider",
        groupUid,
        sourceUid: uid,
        createTime: login.now,
      });
    }
    if (found.idp && found.idp.defaultRole !== "") {
      // A grant like any other: recorded with the binding, by the person signing in.
      const grant = changeScope({
        type: "dev.gatehouse.iam.role_binding.created.v1",
        source: "/oauth/callback",
        requestId: req.id,
        actorUid: person.uid,
        // Not a self-grant: the organization's provider grants it to everyone signing in.
        reason: "identity_provider_default_role",
        via: { identityProviderUid: found.idp.uid, identityProviderName: found.idp.name },
      });
      const idp = found.idp;
      await grantDefaultRole({ store: store.recording(grant), now, log }, person.uid, idp);
    }
    if (found.idp) {
      // The provider's groups claim sets the person's membership of the teams it maps.
      const asRecord = claims as unknown as Record<string, unknown>;
      await syncTeams({ store, now, log }, person.uid, found.idp, asRecord, req.id);
    }
    if (pending.deviceUserCode !== undefined) {
      // The person approves or denies the device's code; the device's poll starts the session.
      log({ identity: person.uid, provider: pending.provider }, "person signed in for a device");
      opts.onLogin?.("issued");
      return device.confirmPage(reply, person, pending.deviceUserCode);
    }
    const code = randomBytes(32).toString("base64url");
    await store.createAuthorizationCode({
      codeHash: digest(code),
      sessionId: randomBytes(16).toString("base64url"),
      identityUid: person.uid,
      clientId: pending.clientId,
      redirectUri: pending.redirectUri,
      codeChallenge: pending.codeChallenge,
      expireTime: now() + codeLifetimeMs,
      now: now(),
    });
    log({ identity: person.uid, provider: pending.provider }, "person signed in");
    opts.onLogin?.("issued");
    return back({ code });
  }

  app.post(`${path}/oauth/token`, async (req, reply) => {
    reply.header("cache-control", "no-store").header("pragma", "no-cache");
    const form = formOf(req.body);
    if (!form)
      return tokenError(
        reply,
        "invalid_request",
        "send a form (application/x-www-form-urlencoded), each parameter once",
      );
    const clientId = form.client_id ?? "";
    if (!clients.known(clientId)) {
      return tokenError(reply, "invalid_client", "unknown client_id", 401);
    }
    const next = {
      refreshToken: `gatehouse_rt_${randomBytes(32).toString("base64url")}`,
      expireTime: now() + refreshTtlMs,
    };
    const nextHash = { tokenHash: digest(next.refreshToken), expireTime: next.expireTime };
    let outcome: Awaited<ReturnType<Store["rotateRefreshToken"]>>;
    if (form.grant_type === "authorization_code") {
      const { code, code_verifier: verifier, redirect_uri: redirectUri } = form;
      if (!code || !verifier || !redirectUri) {
        return tokenError(
          reply,
          "invalid_request",
          "code, code_verifier and redirect_uri are required",
        );
      }
      // The session's first refresh token is a change, recorded with it (never the token).
      const scope = changeScope({
        type: codeRedeemedType,
        source: tokenSource,
        requestId: req.id,
        outcomeTypes: replayRevokes,
      });
      outcome = await store.recording(scope).redeemAuthorizationCode(
        digest(code),
        now(),
        (issued) => {
          if (issued.clientId !== clientId) return "the code was issued to another client";
          if (issued.redirectUri !== redirectUri)
            return "redirect_uri differs from the authorization request";
          if (s256(verifier) !== issued.codeChallenge)
            return "code_verifier does not match the code_challenge";
          return undefined;
        },
        nextHash,
      );
    } else if (form.grant_type === "refresh_token") {
      if (!form.refresh_token)
        return tokenError(reply, "invalid_request", "refresh_token is required");
      const scope = changeScope({
        type: refreshedType,
        source: tokenSource,
        requestId: req.id,
        outcomeTypes: replayRevokes,
      });
      const hash = digest(form.refresh_token);
      outcome = await store.recording(scope).rotateRefreshToken(hash, clientId, now(), nextHash);
    } else if (form.grant_type === deviceCodeGrantType) {
      const scope = changeScope({
        type: deviceRedeemedType,
        source: tokenSource,
        requestId: req.id,
      });
      const polled = await device.poll(form, clientId, nextHash, scope);
      if (polled.kind === "error") return tokenError(reply, polled.error, polled.description);
      outcome = polled;
    } else {
      return tokenError(
        reply,
        "unsupported_grant_type",
        `grant_type must be authorization_code, refresh_token or ${deviceCodeGrantType}`,
      );
    }
    switch (outcome.kind) {
      case "invalid":
        log({ clientId, grant: form.grant_type, reason: "invalid" }, "token request refused");
        return tokenError(
          reply,
          "invalid_grant",
          `the ${grantNoun(form.grant_type)} is unknown, expired or revoked`,
        );
      case "replayed":
        log({ clientId, grant: form.grant_type, reason: "replayed" }, "token request refused");
        return tokenError(
          reply,
          "invalid_grant",
          `the ${grantNoun(form.grant_type)} was already used: the session it belongs to is revoked`,
        );
      case "refused":
        log({ clientId, grant: form.grant_type, reason: outcome.reason }, "token request refused");
        return tokenError(reply, "invalid_grant", outcome.reason);
    }
    const identity = await store.getIdentity(outcome.identityUid);
    const issued = await opts.tokens.issue(outcome.identityUid, config.baseUrl, {
      sid: outcome.sessionId,
      ...(identity && identity.email !== "" ? { email: identity.email } : {}),
    });
    return reply.type("application/json").send({
      access_token: issued.token,
      token_type: "Bearer",
      expires_in: Math.max(0, Math.round((issued.expiry.getTime() - now()) / 1000)),
      refresh_token: next.refreshToken,
      refresh_token_expires_in: config.refreshTokenTtlSeconds,
    });
  });

  app.post(`${path}/oauth/revoke`, async (req, reply) => {
    reply.header("cache-control", "no-store");
    const form = formOf(req.body);
    if (!form?.token) return tokenError(reply, "invalid_request", "token is required");
    // RFC 7009: a refresh token ends its session; an access token of a session does too. An
    // unknown token is not an error: the answer is the same, and tells nothing.
    // A sign-out that ends a session is recorded with it, about and by the person (the
    // holder of their token); one that ends nothing records nothing.
    const signOut = () =>
      changeScope({ type: signedOutType, source: "/oauth/revoke", requestId: req.id });
    const hash = digest(form.token);
    const byRefresh = await store.recording(signOut()).revokeSessionByRefreshToken(hash, now());
    if (byRefresh.kind === "unknown") {
      let sid: string | undefined;
      try {
        ({ sid } = await opts.verifier.verify(form.token));
      } catch {
        // not one of our tokens
      }
      if (sid !== undefined) {
        const session = sid;
        await store.recording(signOut()).revokeSession(session, now());
      }
    }
    return reply.code(200).send();
  });
};

function s256(verifier: string): string {
  return createHash("sha256").update(verifier).digest("base64url");
}

function grantNoun(grantType: string | undefined): string {
  return grantType === "refresh_token" ? "refresh token" : "code";
}

function redirectWith(reply: FastifyReply, target: string, params: Record<string, string>) {
  const url = new URL(target);
  for (const [k, v] of Object.entries(params)) url.searchParams.set(k, v);
  return reply.header("cache-control", "no-store").redirect(url.href, 302);
}
