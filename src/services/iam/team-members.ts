import { invalidField } from "../../errors.js";
import type { Store } from "../../store/store.js";
import type { TeamRecord } from "../../store/team-store.js";
import { rootOf } from "../../uid.js";

// One answer for a missing identity, one of another organization and a person who is not in
// this organization, so that a caller learns nothing about other organizations or people.
const foreignMember =
  "must be an identity of the team's organization, or a person already in it (people join through invites)";

/** Whether the person holds a binding in the organization `org`, or is in one of its teams. */
async function isPersonOf(
  tx: Pick<Store, "listRoleBindings" | "teamsOfIdentity">,
  personUid: string,
  org: string,
): Promise<boolean> {
  const page = await tx.listRoleBindings({
    descendantsOf: org,
    filters: { identity: personUid },
    order: { field: "uid", desc: false },
    skip: 0,
    limit: 1,
  });
  return page.items.length > 0 || (await tx.teamsOfIdentity(personUid, org)).length > 0;
}

/**
 * Refuse (INVALID_ARGUMENT on `field(i)`) an identity that may not join `team`: one that does
 * not exist, one of another organization, or a person not yet in the team's organization. A
 * person joins an organization through an invite or its identity provider: adding a stranger
 * by uid would tell whether that person exists and grant them access unasked.
 */
export async function requireTeamMembers(
  tx: Pick<Store, "getIdentity" | "listRoleBindings" | "teamsOfIdentity">,
  team: TeamRecord,
  identityUids: readonly string[],
  field: (i: number) => string,
): Promise<void> {
  const org = rootOf(team.uid);
  for (const [i, uid] of identityUids.entries()) {
    const identity = await tx.getIdentity(uid);
    const person = identity?.groupUid === "";
    if (!identity || !(person || rootOf(identity.uid) === org)) {
      throw invalidField(field(i), foreignMember);
    }
    if (person && !(await isPersonOf(tx, uid, org))) throw invalidField(field(i), foreignMember);
  }
}
