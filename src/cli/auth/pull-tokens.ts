import { randomBytes } from "node:crypto";
import { timestampDate, timestampFromMs } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, createClient, type Transport } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { exportJWK, generateKeyPair, SignJWT } from "jose";
import {
  IdentitiesService,
  type Identity,
} from "../../../gen/gatehouse/iam/v2beta1/identities_pb.js";
import { RoleBindingsService } from "../../../gen/gatehouse/iam/v2beta1/role_bindings_pb.js";
import { builtinRoles } from "../../auth/capabilities.js";
import { durationForms, parseDurationSeconds } from "../../duration.js";
import { isUid } from "../../uid.js";
import { CliError, type CliIo } from "../cli-io.js";
import { printApiError } from "../remote/api-output.js";
import { groupByPath, type Lister } from "../remote/names.js";
import { apiToken, normalizeApi } from "./auth-commands.js";
import { registryHost } from "./docker-credentials.js";

/**
 * A pull token is a workload identity with static keys whose private key only the token's
 * holder has: the command line makes the key pair, registers the public key (CreateIdentity
 * with staticKeys), binds the built-in `registry.pull` role until the same expiry
 * (CreateRoleBinding with expireTime), and signs the one token, a JWT for the identity, with
 * the private key, which it then forgets. The registry's token endpoint takes it as the
 * password with the identity's uid as the username (`docker login`). Its subject marks it.
 */
export const pullTokenSubjectPrefix = "pull-token-";

/** The issuer of pull tokens made for the API at `api`: their static keys' issuer. */
const issuerFor = (api: string) => `${api}/pull-token`;

/** The longest a pull token may live: its static keys' limit (365 days). */
const maxPullTokenSeconds = 365 * 86_400;

const pullRole = builtinRoles.find((r) => r.name === "registry.pull")!;

/** What `gatehouse auth pull-token create` is given. */
export interface PullTokenCreate {
  api: string;
  parent: string;
  registry: string;
  /** A duration (durationForms); default 30d. */
  for?: string;
  name?: string;
}

/** The clients of a pull-token command, with the login's token. */
async function clientsFor(api: string, io: CliIo) {
  const token = await apiToken(api, io);
  const transport: Transport = createConnectTransport({
    baseUrl: api,
    httpVersion: "1.1",
    interceptors: [
      (next) => (req) => {
        req.header.set("authorization", `Bearer ${token}`);
        return next(req);
      },
    ],
  });
  return {
    identities: createClient(IdentitiesService, transport),
    bindings: createClient(RoleBindingsService, transport),
    list: ((method, req) => {
      const client = createClient(method.parent, transport) as unknown as Record<
        string,
        (r: object) => Promise<unknown>
      >;
      return client[method.localName]!(req);
    }) satisfies Lister,
  };
}

/** Run `body`; an API refusal is printed as every remote command prints it, exit 1. */
async function answered(io: CliIo, body: () => Promise<number>): Promise<number> {
  try {
    return await body();
  } catch (err) {
    if (!(err instanceof ConnectError)) throw err;
    printApiError(io, err);
    return err.code === Code.Unauthenticated ? 3 : 1;
  }
}

/**
 * `gatehouse auth pull-token create --parent <group> --registry <host> [--for 30d]`: make a
 * pull token and print the `docker login` line that uses it. Refused halfway (the binding),
 * the identity it made is deleted again.
 */
export async function createPullToken(opts: PullTokenCreate, io: CliIo): Promise<number> {
  const api = normalizeApi(opts.api);
  const seconds = parseDurationSeconds(opts.for ?? "30d");
  if (seconds === undefined || seconds === 0) {
    throw new CliError(`--for: not a duration: ${JSON.stringify(opts.for)} (${durationForms})`);
  }
  if (seconds > maxPullTokenSeconds) throw new CliError("--for: at most 365d");
  const registry = registryHost(opts.registry);
  if (registry === "") {
    throw new CliError(`--registry: not a registry host: ${JSON.stringify(opts.registry)}`);
  }
  return answered(io, async () => {
    const c = await clientsFor(api, io);
    const parent = isUid(opts.parent)
      ? opts.parent
      : await groupByPath(c.list, "parent", opts.parent);
    const expireMs = Date.now() + seconds * 1000;
    const { publicKey, privateKey } = await generateKeyPair("ES256");
    const kid = randomBytes(8).toString("hex");
    const jwk = { ...(await exportJWK(publicKey)), kid, alg: "ES256", use: "sig" };
    const subject = `${pullTokenSubjectPrefix}${randomBytes(8).toString("hex")}`;
    const issuer = issuerFor(api);
    const identity = await c.identities.createIdentity({
      parent,
      identity: {
        name: opts.name ?? `pull token ${new Date(expireMs).toISOString().slice(0, 10)}`,
        description: `registry.pull until ${new Date(expireMs).toISOString()}`,
        method: {
          case: "staticKeys",
          value: {
            issuer,
            subject,
            issuerKeys: JSON.stringify({ keys: [jwk] }),
            expirationTime: timestampFromMs(expireMs),
          },
        },
      },
    });
    try {
      await c.bindings.createRoleBinding({
        parent,
        roleBinding: {
          identityUid: identity.uid,
          roleUid: pullRole.uid,
          expireTime: timestampFromMs(expireMs),
        },
      });
    } catch (err) {
      // No identity without its binding: it could do nothing, and would only clutter lists.
      await c.identities.deleteIdentity({ uid: identity.uid }).catch(() => undefined);
      throw err;
    }
    const token = await new SignJWT({})
      .setProtectedHeader({ alg: "ES256", kid })
      .setIssuer(issuer)
      .setSubject(subject)
      .setAudience(api)
      .setIssuedAt()
      .setExpirationTime(Math.floor(expireMs / 1000))
      .sign(privateKey);
    io.err(
      `pull token ${identity.uid} for ${parent}: registry.pull until ${new Date(expireMs).toISOString()}\n`,
    );
    io.out(`docker login ${registry} --username ${identity.uid} --password ${token}\n`);
    return 0;
  });
}

/** Whether an identity is a pull token (made by createPullToken). */
function isPullToken(i: Identity): boolean {
  return (
    i.method.case === "staticKeys" && i.method.value.subject.startsWith(pullTokenSubjectPrefix)
  );
}

/** `gatehouse auth pull-token list --parent <group>`: the pull tokens at and below a group. */
export async function listPullTokens(
  opts: { api: string; parent: string },
  io: CliIo,
): Promise<number> {
  const api = normalizeApi(opts.api);
  return answered(io, async () => {
    const c = await clientsFor(api, io);
    const parent = isUid(opts.parent)
      ? opts.parent
      : await groupByPath(c.list, "parent", opts.parent);
    const found: Identity[] = [];
    let pageToken = "";
    do {
      const page = await c.identities.listIdentities({
        uidp: { descendantsOf: parent, childrenOf: "" },
        pageSize: 200,
        pageToken,
      });
      found.push(...page.identities.filter(isPullToken));
      pageToken = page.nextPageToken ?? "";
    } while (pageToken !== "");
    const rows = found.map((i) => {
      const keys = i.method.case === "staticKeys" ? i.method.value : undefined;
      const expires = keys?.expirationTime ? timestampDate(keys.expirationTime).toISOString() : "";
      return [i.uid, i.name, expires];
    });
    const widths = [0, 1, 2].map((n) =>
      Math.max(["UID", "NAME", "EXPIRES"][n]!.length, ...rows.map((r) => r[n]!.length)),
    );
    const line = (cells: string[]) =>
      `${cells
        .map((v, n) => v.padEnd(widths[n]!))
        .join("  ")
        .trimEnd()}\n`;
    io.out(line(["UID", "NAME", "EXPIRES"]));
    for (const r of rows) io.out(line(r));
    return 0;
  });
}

/** `gatehouse auth pull-token delete <uid>`: delete a pull token's identity and its binding. */
export async function deletePullToken(
  opts: { api: string; uid: string },
  io: CliIo,
): Promise<number> {
  const api = normalizeApi(opts.api);
  return answered(io, async () => {
    const c = await clientsFor(api, io);
    const identity = await c.identities.getIdentity({ uid: opts.uid });
    // Only a pull token: this command never deletes another identity by a slip of the uid.
    if (!isPullToken(identity)) throw new CliError(`${opts.uid} is not a pull token`);
    await c.identities.deleteIdentity({ uid: opts.uid });
    io.out(`deleted pull token ${opts.uid}\n`);
    return 0;
  });
}
