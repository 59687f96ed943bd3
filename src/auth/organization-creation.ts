import type { Config } from "../config.js";
import { deniedBecause } from "../errors.js";
import type { IdentityRecord } from "../store/iam-store.js";
import { personUid } from "./login/person.js";

/** The operator's settings that say who may create an organization. */
export type OrganizationCreationSettings = Pick<
  Config,
  "organizationCreation" | "organizationCreationDomains"
>;

/** The ErrorInfo reason of a refused organization creation. */
export const organizationCreationReason = "ORGANIZATION_CREATION_RESTRICTED";

/**
 * Why `person` may not create an organization on this server, or undefined if they may.
 * With `anyone` (the default) every person may. Otherwise a person who came through an
 * organization's identity provider never may (that organization vouches for them, not the
 * server's operator); with `allowed-domains` a person may if their verified email's domain is
 * listed; with `bootstrap` no one may (`gatehouse bootstrap` on the server's machine still can).
 */
export function organizationCreationRefusal(
  settings: OrganizationCreationSettings,
  person: IdentityRecord,
): string | undefined {
  const mode = settings.organizationCreation;
  if (mode === "anyone") return undefined;
  if (mode === "bootstrap") {
    return "this server's operator creates organizations (gatehouse bootstrap); ask them for one";
  }
  const signIn = person.signIn;
  if (!signIn || person.uid !== personUid(signIn.issuer, signIn.subject)) {
    return "people who sign in through an organization's identity provider may not create organizations on this server";
  }
  const at = person.email.lastIndexOf("@");
  if (at < 0) {
    return "creating an organization on this server needs a verified email in an allowed domain, and yours has none";
  }
  const domain = person.email.slice(at + 1).toLowerCase();
  if (!settings.organizationCreationDomains.includes(domain)) {
    return `people of ${domain} may not create organizations on this server`;
  }
  return undefined;
}

/** Throw PERMISSION_DENIED (organizationCreationReason) unless `person` may create one. */
export function requireOrganizationCreation(
  settings: OrganizationCreationSettings,
  person: IdentityRecord,
): void {
  const why = organizationCreationRefusal(settings, person);
  if (why !== undefined) throw deniedBecause(organizationCreationReason, why);
}
