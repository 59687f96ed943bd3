import { changeScope } from "../../events/audit-scope.js";
import { requireAll } from "../../grants/grant-rule.js";
import { requireTeamPowers } from "../../services/team-bindings.js";
import type { IdentityProviderRecord } from "../../store/iam-store.js";
import { type Store, StoreError } from "../../store/store.js";
import { rootOf } from "../../uid.js";
import { createAuthorizer } from "../authorizer.js";

/** What a team sync needs. */
export interface TeamSyncDeps {
  store: Store;
  now: () => number;
  /** Told why a membership was not granted: reasons and uids only. */
  log: (fields: Record<string, unknown>, msg: string) => void;
}

/** The most values of a groups claim read: a claim longer than this is cut, never an error. */
const maxClaimValues = 1000;

/** The values of the groups claim `name` in `claims`: an array of strings, or one string. */
export function groupsOf(claims: Record<string, unknown>, name: string): Set<string> {
  if (name === "") return new Set();
  const value = claims[name];
  const values = Array.isArray(value) ? value : typeof value === "string" ? [value] : [];
  return new Set(values.slice(0, maxClaimValues).filter((v): v is string => typeof v === "string"));
}

/**
 * Set a person's membership of each team an organization provider maps (its groupMappings) to
 * what the groups claim of this sign-in says: a team whose group is in the claim gains the
 * person, one whose group is not loses them. Additions are made with the authority of the
 * provider's writer, as its default role is: only while the writer may add members to the team
 * (teams.update and every capability the team holds, where it holds it; checked as the
 * membership commits). Removals only take access away and always apply. Each change records
 * its event (`team_members.added` / `.removed`, actor: the person). Returns the teams joined
 * and left. The sign-in itself stands whatever happens here.
 */
export async function syncTeams(
  deps: TeamSyncDeps,
  personUid: string,
  idp: IdentityProviderRecord,
  claims: Record<string, unknown>,
  requestId: string,
): Promise<{ joined: string[]; left: string[] }> {
  const { store, now, log } = deps;
  const out = { joined: [] as string[], left: [] as string[] };
  // Without a groups claim to read, mappings say nothing: no one joins or leaves.
  if (idp.groupMappings.length === 0 || idp.oidc.groupsClaim === "") return out;
  const groups = groupsOf(claims, idp.oidc.groupsClaim);
  const wanted = new Set<string>();
  const mapped = new Set<string>();
  for (const m of idp.groupMappings) {
    // Only the provider's own organization's teams, whatever was stored.
    if (rootOf(m.teamUid) !== rootOf(idp.uid)) continue;
    mapped.add(m.teamUid);
    if (groups.has(m.group)) wanted.add(m.teamUid);
  }
  const held = new Set((await store.teamsOfIdentity(personUid, rootOf(idp.uid))).map((t) => t.uid));
  const scope = (type: string, team: string) =>
    changeScope({
      type: `dev.gatehouse.iam.team_members.${type}.v1`,
      source: "/oauth/callback",
      requestId,
      actorUid: personUid,
      subjectUid: team,
    });
  for (const team of mapped) {
    try {
      if (wanted.has(team) && !held.has(team)) {
        const joined = await store.recording(scope("added", team)).atomically(async (tx) => {
          const authorizer = createAuthorizer(tx);
          // The writer as stored when the membership commits: a rewrite since takes over.
          const current = await tx.getIdentityProvider(idp.uid);
          const writerUid = current?.writerUid ?? "";
          if (writerUid === "" || !(await tx.identityExists(writerUid))) return false;
          const writer = { identityUid: writerUid };
          try {
            await requireAll(authorizer, writer, ["teams.update"], team);
            await requireTeamPowers(authorizer, tx, writer, team);
          } catch {
            log({ provider: idp.uid, team, reason: "writer_may_not_add" }, "team not joined");
            return false;
          }
          return (await tx.addTeamMembers(team, [personUid], now())).length > 0;
        });
        if (joined) out.joined.push(team);
      } else if (!wanted.has(team) && held.has(team)) {
        const left = await store
          .recording(scope("removed", team))
          .removeTeamMembers(team, [personUid]);
        if (left.length > 0) out.left.push(team);
      }
    } catch (err) {
      // A team deleted since the mapping was written: nothing to join or leave.
      if (!(err instanceof StoreError)) throw err;
      log({ provider: idp.uid, team, reason: err.kind }, "team membership not changed");
    }
  }
  return out;
}
