import type { FastifyPluginAsync, FastifyReply } from "fastify";
import { cutOff } from "../auth/access-interceptor.js";
import type { Authorizer } from "../auth/authorizer.js";
import { narrowingOf, type Principal } from "../auth/principal.js";
import { TokenError, type TokenVerifier } from "../auth/tokens.js";
import { Refused } from "../services/sts/identity-match.js";
import type { IdentityRecord } from "../store/iam-store.js";
import type { RepoRecord } from "../store/registry-store.js";
import { StoreError } from "../store/store.js";
import { isUid } from "../uid.js";
import type { RegistryNames } from "./registry-names.js";
import type { RegistryAccess, RegistryTokenSigner } from "./registry-tokens.js";

/** Options of registryTokenRoutes. */
export interface RegistryTokenOptions {
  /** The auth URL: the endpoint is `{auth URL}/registry/token`; `iss` of its tokens. */
  authUrl: string;
  /** The names a registry may give as `service`: its service name, and the setting as given. */
  services: readonly string[];
  /** Verifies Gatehouse tokens of either audience (the base URL or the registry). */
  verifier: Pick<TokenVerifier, "verify">;
  identityExists(uid: string): Promise<boolean>;
  sessionActive(sid: string): Promise<boolean>;
  /** When the identity's tokens were cut off (AccessDeps.tokenCutoff), or 0. */
  tokenCutoff?(uid: string): Promise<number>;
  /** Match a workload's OIDC token to identity `uid`, as the STS exchange does. */
  matchIdentity(uid: string, token: string): Promise<IdentityRecord>;
  /** Record that a workload authenticated (its lastSeenTime), as an exchange would. */
  touchIdentity(uid: string): Promise<void>;
  names: RegistryNames;
  authorizer: Pick<Authorizer, "capabilitiesAt">;
  signer: RegistryTokenSigner;
  /** Told why a request was refused: reasons and uids, never a credential. */
  log(fields: Record<string, unknown>, msg: string): void;
  /** Told how each token request ended (for metrics): a token issued, refused, or a failure. */
  onOutcome?: (outcome: "issued" | "refused" | "error") => void;
}

/** The most bytes a token request's query (or form) may have. */
export const maxTokenQueryBytes = 4096;
/** The most scopes one token request may ask for (clients ask for one or two). */
export const maxScopes = 16;
const maxPasswordLength = 8192;
const maxNameLength = 256;

const component = "[a-z0-9]+(?:(?:[._]|__|[-]+)[a-z0-9]+)*";
const repositoryName = new RegExp(`^${component}(?:/${component})*$`);
const scopeType = /^[a-z0-9]+(?:\([a-z0-9]+\))?$/;
const scopeActions = /^(?:[a-z*]+(?:,[a-z*]+)*)?$/;

/** A refusal: HTTP status, OAuth-style error code and a sentence for people. */
class Refusal extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

const badRequest = (message: string) => new Refusal(400, "invalid_request", message);
const badCredentials = () =>
  new Refusal(
    401,
    "invalid_client",
    "the credentials are not valid: the password must be a Gatehouse token, or a workload's " +
      "OIDC token with the identity's uid as the username",
  );

interface Scope {
  type: string;
  name: string;
  actions: string[];
}

/** Parse the `scope` values: each may hold several, space-separated (the OAuth form). */
function parseScopes(values: readonly string[]): Scope[] {
  const scopes: Scope[] = [];
  for (const value of values) {
    for (const s of value.split(" ")) {
      if (s === "") continue;
      if (scopes.length === maxScopes) {
        throw badRequest(`at most ${maxScopes} scopes may be asked for at once`);
      }
      const parts = s.split(":");
      const [type, name, actions] = parts;
      if (
        parts.length !== 3 ||
        !scopeType.test(type!) ||
        name === "" ||
        name!.length > maxNameLength ||
        !scopeActions.test(actions!)
      ) {
        throw badRequest(
          `scope ${JSON.stringify(s.slice(0, 300))} is not <type>:<name>:<actions> ` +
            "(e.g. repository:acme/app:pull,push)",
        );
      }
      if (type === "repository" && !repositoryName.test(name!)) {
        throw badRequest(`scope ${JSON.stringify(s.slice(0, 300))}: not a repository name`);
      }
      scopes.push({ type: type!, name: name!, actions: [...new Set(actions!.split(","))] });
    }
  }
  return scopes;
}

/** Username and password of an HTTP Basic Authorization header; undefined: no header. */
function basicCredentials(
  header: string | undefined,
): { user: string; password: string } | undefined {
  if (header === undefined) return undefined;
  const m = /^Basic +([A-Za-z0-9+/=]+) *$/i.exec(header);
  if (!m?.[1] || m[1].length > 4 * maxPasswordLength) throw badCredentials();
  const text = Buffer.from(m[1], "base64").toString("utf8");
  const colon = text.indexOf(":");
  if (colon < 0) throw badCredentials();
  return { user: text.slice(0, colon), password: text.slice(colon + 1) };
}

/**
 * Serve the Docker Registry v2 token endpoint at `{auth URL}/registry/token`: `GET` with
 * `service`, `scope` (repeatable) and `account`, credentials by HTTP Basic or none; and the
 * OAuth form `POST` (`grant_type=password` with username and password, or `refresh_token`
 * whose value is taken as the password) that containerd and newer docker clients send.
 * Grants: `pull` with registry.pull at the repo's group (or above), or on a public repo for
 * anyone; `push` with registry.push; `delete` with tag.delete. What is not allowed, or names
 * no repo, is granted nothing, as registries expect: the answer never tells which.
 */
export const registryTokenRoutes: FastifyPluginAsync<RegistryTokenOptions> = async (app, opts) => {
  const authUrl = opts.authUrl.replace(/\/$/, "");
  const path = `${new URL(authUrl).pathname.replace(/\/$/, "")}/registry/token`;
  const realm = `${authUrl}/registry/token`;
  const services = new Set(opts.services.filter((s) => s !== ""));
  const expected = opts.services[0] ?? "";

  app.addContentTypeParser(
    "application/x-www-form-urlencoded",
    { parseAs: "string", bodyLimit: maxTokenQueryBytes },
    (_req, body, done) => done(null, new URLSearchParams(body as string)),
  );

  async function authenticate(user: string, password: string): Promise<Principal> {
    if (password === "" || password.length > maxPasswordLength || user.length > maxNameLength) {
      throw badCredentials();
    }
    try {
      const verified = await opts.verifier.verify(password);
      const { sub, sid, iat } = verified;
      if (!(await opts.identityExists(sub))) {
        opts.log({ reason: "identity_gone" }, "registry token refused");
        throw badCredentials();
      }
      if (sid !== undefined && !(await opts.sessionActive(sid))) {
        opts.log({ reason: "session_revoked" }, "registry token refused");
        throw badCredentials();
      }
      if (opts.tokenCutoff && cutOff(iat, await opts.tokenCutoff(sub))) {
        opts.log({ reason: "token_cut_off" }, "registry token refused");
        throw badCredentials();
      }
      // A narrowed token (STS `cap`, `group`) pulls and pushes only within its narrowing.
      const narrowing = narrowingOf(verified);
      return narrowing === undefined ? { identityUid: sub } : { identityUid: sub, narrowing };
    } catch (err) {
      if (!(err instanceof TokenError)) throw err;
      // Not a Gatehouse token: a workload's OIDC token for the identity the username names.
      if (!isUid(user)) {
        opts.log({ reason: err.reason }, "registry token refused");
        throw badCredentials();
      }
    }
    try {
      const { uid } = await opts.matchIdentity(user, password);
      await opts.touchIdentity(uid);
      return { identityUid: uid };
    } catch (err) {
      // Deleted between the match and the touch: as if it had never existed.
      if (err instanceof StoreError && err.kind === "not_found") throw badCredentials();
      if (!(err instanceof Refused)) throw err;
      opts.log({ reason: err.reason, identity: user }, "registry token refused");
      throw badCredentials();
    }
  }

  async function grant(
    caller: Principal | undefined,
    scopes: readonly Scope[],
  ): Promise<RegistryAccess[]> {
    const held = new Map<string, Promise<ReadonlySet<string>>>();
    // One resolution per name however often the request repeats it: a request costs at most
    // maxScopes queries, one each whatever the depth of the name.
    const repos = new Map<string, Promise<RepoRecord | undefined>>();
    const access: RegistryAccess[] = [];
    for (const scope of scopes) {
      const entry: RegistryAccess = { type: scope.type, name: scope.name, actions: [] };
      access.push(entry);
      if (scope.type !== "repository") continue;
      let resolving = repos.get(scope.name);
      if (!resolving) {
        resolving = opts.names.resolve(scope.name);
        repos.set(scope.name, resolving);
      }
      const repo = await resolving;
      if (!repo) continue;
      let caps = held.get(repo.groupUid);
      if (!caps) {
        caps =
          caller === undefined
            ? Promise.resolve(new Set<string>())
            : opts.authorizer.capabilitiesAt(caller, repo.groupUid);
        held.set(repo.groupUid, caps);
      }
      const has = await caps;
      for (const action of scope.actions) {
        const allowed =
          (action === "pull" && (repo.public || has.has("registry.pull"))) ||
          (action === "push" && has.has("registry.push")) ||
          (action === "delete" && has.has("tag.delete"));
        if (allowed) entry.actions.push(action);
      }
    }
    return access;
  }

  async function answer(
    params: URLSearchParams,
    credentials: { user: string; password: string } | undefined,
    reply: FastifyReply,
  ) {
    const service = params.getAll("service");
    if (service.length !== 1 || service[0] === "") {
      throw badRequest(`service is required, once: the registry's service name (${expected})`);
    }
    if (!services.has(service[0]!)) {
      throw badRequest(
        `service ${JSON.stringify(service[0]!.slice(0, 300))} is not this registry (${expected})`,
      );
    }
    const account = params.getAll("account");
    if (account.length > 1 || (account[0]?.length ?? 0) > maxNameLength) {
      throw badRequest(`account may be given once, at most ${maxNameLength} characters`);
    }
    const scopes = parseScopes(params.getAll("scope"));
    const caller =
      credentials === undefined
        ? undefined
        : await authenticate(credentials.user, credentials.password);
    const uid = caller?.identityUid ?? "";
    const access = await grant(caller, scopes);
    const { token, issuedAt, expiresIn } = await opts.signer.sign(uid, service[0]!, access);
    opts.onOutcome?.("issued");
    return reply
      .header("cache-control", "no-store")
      .header("pragma", "no-cache")
      .header("content-type", "application/json")
      .send(
        JSON.stringify({
          token,
          access_token: token,
          expires_in: expiresIn,
          issued_at: issuedAt.toISOString(),
        }),
      );
  }

  function refuse(reply: FastifyReply, err: unknown) {
    opts.onOutcome?.(err instanceof Refusal ? "refused" : "error");
    if (!(err instanceof Refusal)) throw err;
    if (err.status === 401) reply.header("www-authenticate", `Basic realm="${realm}"`);
    return reply
      .code(err.status)
      .header("cache-control", "no-store")
      .header("content-type", "application/json")
      .send(JSON.stringify({ error: err.code, error_description: err.message }));
  }

  app.get(path, async (req, reply) => {
    try {
      const q = req.url.indexOf("?");
      const query = q < 0 ? "" : req.url.slice(q + 1);
      if (query.length > maxTokenQueryBytes) {
        throw new Refusal(
          414,
          "invalid_request",
          `the query is longer than ${maxTokenQueryBytes} bytes`,
        );
      }
      const credentials = basicCredentials(req.headers.authorization);
      return await answer(new URLSearchParams(query), credentials, reply);
    } catch (err) {
      return refuse(reply, err);
    }
  });

  app.post(path, async (req, reply) => {
    try {
      if (!(req.body instanceof URLSearchParams)) {
        throw badRequest("the body must be an application/x-www-form-urlencoded form");
      }
      const form = req.body;
      const grantType = form.getAll("grant_type");
      let credentials: { user: string; password: string } | undefined;
      if (grantType.length !== 1) throw badRequest("grant_type is required, once");
      if (grantType[0] === "password") {
        credentials = { user: form.get("username") ?? "", password: form.get("password") ?? "" };
      } else if (grantType[0] === "refresh_token") {
        // Gatehouse hands out no registry refresh tokens: a client that holds one was given a
        // Gatehouse token as its identity token (docker's credential helpers can), which is
        // checked as the password would be.
        credentials = {
          user: form.get("username") ?? "",
          password: form.get("refresh_token") ?? "",
        };
      } else {
        throw new Refusal(
          400,
          "unsupported_grant_type",
          "grant_type must be password or refresh_token",
        );
      }
      return await answer(form, credentials, reply);
    } catch (err) {
      return refuse(reply, err);
    }
  });
};
