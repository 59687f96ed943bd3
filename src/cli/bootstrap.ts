import { randomBytes } from "node:crypto";
import { ownerRole } from "../auth/capabilities.js";
import { createKeyRing } from "../auth/keyring.js";
import { createTokenIssuer } from "../auth/tokens.js";
import { changeScope } from "../events/audit-scope.js";
import type { ClaimMatchRecord } from "../store/iam-store.js";
import type { Store } from "../store/store.js";
import { newChildUid, newRootUid } from "../uid.js";
import { checkGroupName, violations } from "../validation/field-rules.js";
import { CliError, type CliIo } from "./cli-io.js";
import { parseCommandArgs } from "./command-args.js";
import { openCommandDatabase } from "./open-database.js";
import { servingUrls } from "./serving-urls.js";

/** The options of `gatehouse bootstrap`. */
export const bootstrapOptions = {
  org: { help: "name of the organization to create (required)" },
};

/**
 * The issuer of every bootstrap identity's claimMatch. It is not an http(s) URL, so the STS
 * exchange refuses it before contacting anything: no OIDC token can ever match, and the
 * identity's tokens come only from `gatehouse token`, run against the database.
 */
export const bootstrapIssuer = "urn:gatehouse:bootstrap";

/**
 * `gatehouse bootstrap --org <name>`: create an organization and an owner identity in it, and
 * print `{orgUid, identityUid, token, expiry}` as JSON. The identity is a workload identity of
 * the organization whose claimMatch nothing can satisfy (see bootstrapIssuer): it shows up in
 * the organization's identities, and an owner can delete it once real owners are bound.
 */
export async function bootstrap(argv: string[], io: CliIo): Promise<number> {
  const { own, config, given } = parseCommandArgs(argv, bootstrapOptions, io.env);
  const v = violations();
  checkGroupName(v, "--org", own.org ?? "");
  const bad = v.list[0];
  if (bad) throw new CliError(`${bad.field} ${bad.description}`);
  const name = own.org as string;

  const store = await openCommandDatabase(config, { create: true });
  try {
    const urls = await servingUrls(store, config, given, (l) =>
      io.err(`gatehouse bootstrap: ${l}\n`),
    );
    const { orgUid, identityUid } = await bootstrapOrganization(store, name, Date.now());
    const keyRing = createKeyRing({ store });
    const issued = await createTokenIssuer({ keyRing, issuer: urls.authUrl }).issue(
      identityUid,
      urls.baseUrl,
    );
    io.out(
      `${JSON.stringify({ orgUid, identityUid, token: issued.token, expiry: issued.expiry.toISOString() })}\n`,
    );
    return 0;
  } finally {
    await store.close();
  }
}

/**
 * Create an organization named `name`, an identity in it that no OIDC token can match, and a
 * binding of that identity to the built-in owner role at the organization. Three steps, each
 * atomic (createOrganization binds an identity that exists already, and this one lives inside
 * the organization); a failure part-way undoes what was made.
 */
export async function bootstrapOrganization(
  store: Store,
  name: string,
  now: number,
): Promise<{ orgUid: string; identityUid: string }> {
  const orgUid = newRootUid();
  const identityUid = newChildUid(orgUid);
  const claimMatch: ClaimMatchRecord = {
    issuer: bootstrapIssuer,
    issuerPattern: "",
    subject: randomBytes(16).toString("hex"),
    subjectPattern: "",
    audience: "",
    audiencePattern: "",
    claims: {},
    claimPatterns: {},
  };
  // Each change is in the audit trail, by the operator's command (no identity acts).
  const by = (resource: string) =>
    store.recording(
      changeScope({
        type: `dev.gatehouse.iam.${resource}.created.v1`,
        source: "gatehouse bootstrap",
        protocol: "cli",
        operator: "gatehouse bootstrap",
        reason: "bootstrap",
      }),
    );
  await by("group").createGroup({ uid: orgUid, parentUid: "", name, description: "", now });
  try {
    await by("identity").createIdentity({
      uid: identityUid,
      groupUid: orgUid,
      name: "bootstrap owner",
      description: "Made by gatehouse bootstrap; its tokens come only from gatehouse token.",
      claimMatch,
      now,
    });
    await by("role_binding").createRoleBinding({
      uid: newChildUid(orgUid),
      groupUid: orgUid,
      identityUid,
      roleUid: ownerRole.uid,
      now,
    });
  } catch (err) {
    await store.deleteIdentity(identityUid).catch(() => {});
    await store.deleteGroup(orgUid).catch(() => {});
    throw err;
  }
  return { orgUid, identityUid };
}
