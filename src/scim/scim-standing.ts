import { providerPersonUid } from "../auth/login/person.js";
import type { ScimPersonKeys } from "../store/scim-store.js";
import type { Store } from "../store/store.js";

/**
 * Why an organization's directory keeps a person out of the organization: its SCIM connection
 * made them inactive (`active: false`), or deleted them (docs/scim.md, "Signing in after a
 * deprovisioning").
 */
export type DirectoryRefusal = "inactive" | "deleted";

/** What finding a person's standing reads. */
export type StandingStore = Pick<Store, "scimStanding" | "getIdentity" | "listIdentityProviders">;

/**
 * Whether the organization's directory keeps out the person found by `keys` (ScimStore
 * .scimStanding): the directory is the source of truth, so a person its SCIM connection made
 * inactive or deleted is refused until it makes them active (or creates them) again. A person
 * it does not know, or knows as active, is not refused. Undefined: not refused.
 */
export async function directoryRefusal(
  store: Pick<Store, "scimStanding">,
  orgUid: string,
  keys: ScimPersonKeys,
): Promise<DirectoryRefusal | undefined> {
  const standing = await store.scimStanding(orgUid, keys);
  return standing === "inactive" || standing === "deleted" ? standing : undefined;
}

/**
 * directoryRefusal for an identity that exists already (a redeemer of an invite, a requester
 * of access): its externalId key is its subject only when it is a person of one of the
 * organization's own identity providers (the SCIM match by subject, src/store/ops/scim.ts
 * matchPerson); its email key is `email`, else its stored verified email.
 */
export async function identityRefusal(
  store: StandingStore,
  orgUid: string,
  identityUid: string,
  email: string,
): Promise<DirectoryRefusal | undefined> {
  const identity = await store.getIdentity(identityUid);
  let externalId = "";
  const signIn = identity?.signIn;
  if (signIn && signIn.subject !== "") {
    const providers = await store.listIdentityProviders({
      scope: [orgUid],
      filters: {},
      order: { field: "uid", desc: false },
      skip: 0,
      limit: 100,
    });
    const own = providers.items.some(
      (p) => providerPersonUid(p.uid, p.oidc.issuer, signIn.subject) === identityUid,
    );
    if (own) externalId = signIn.subject;
  }
  return directoryRefusal(store, orgUid, {
    identityUid,
    externalId,
    email: email || (identity?.email ?? ""),
    ...(signIn && signIn.issuer !== "" ? { account: signIn } : {}),
  });
}

/**
 * What a refusal says: to the person refused (`self`), or to whoever acts for them (`other`,
 * a reviewer of their access request).
 */
export function refusalMessage(refusal: DirectoryRefusal, to: "self" | "other" = "self"): string {
  const what = refusal === "inactive" ? "deactivated" : "removed";
  return to === "self"
    ? `your organization's directory has ${what} your account in this organization: ask its administrators to reactivate you in the directory`
    : `the organization's directory has ${what} this person's account in this organization: only reactivating them in the directory lets them back in`;
}
