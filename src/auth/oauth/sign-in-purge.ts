import { changeScope } from "../../events/audit-scope.js";
import type { SignInPurge } from "../../store/sign-in-upkeep-store.js";
import { type Store, StoreError } from "../../store/store.js";

/**
 * How long a person a sign-in created may go without completing it (redeeming the code the
 * callback gave) before the purge deletes them: well past the code's minute, so that no
 * sign-in in progress is cut short.
 */
export const unfinishedSignInGraceMs = 15 * 60_000;

/** The audit scope of a person the purge deletes (its subject: the person). */
const purgeScope = () =>
  changeScope({
    type: "dev.gatehouse.iam.identity.deleted.v1",
    source: "sign-in purge",
    protocol: "upkeep",
    operator: "sign-in purge",
  });

/** What the purge needs. */
export interface SignInPurgeDeps {
  store: Pick<Store, "purgeSignIns" | "deleteIdentity" | "deleteIdlePerson" | "recording">;
  now: () => number;
  /**
   * How long a person who holds nothing (no role binding, session, provider or invite) may go
   * unseen before the purge deletes them (GATEHOUSE_IDLE_PERSON_RETENTION).
   */
  idlePersonRetentionMs: number;
  /** Told what was purged: counts and reasons, never a code or a token. */
  log: (fields: Record<string, unknown>, msg: string) => void;
}

/** What one purge did: the store's counts and how many people it deleted. */
export interface SignInPurgeReport extends Omit<SignInPurge, "unfinishedPeople" | "idlePeople"> {
  /** People who never finished a sign-in, deleted. */
  people: number;
  /** People who held nothing and were not seen for the retention, deleted. */
  idlePeople: number;
}

/** The purge of what sign-ins leave behind. */
export interface SignInPurgeJob {
  /** Purge once, at the clock's now. */
  run(): Promise<SignInPurgeReport>;
}

/**
 * Create the purge of sign-in rows: expired codes and refresh tokens, ended sessions (the
 * store's purgeSignIns); the people created by a sign-in they never completed, deleted like
 * any identity (deleteIdentity: an organization's last owner is kept); and the people who
 * completed one but hold nothing and were not seen for idlePersonRetentionMs
 * (deleteIdlePerson, which checks again as it deletes). Each deletion is in the audit trail.
 * Replicas may run it at once: a person deleted by another is skipped.
 */
export function createSignInPurge(deps: SignInPurgeDeps): SignInPurgeJob {
  const { store, now, log } = deps;
  return {
    async run() {
      const t = now();
      const idleBefore = t - deps.idlePersonRetentionMs;
      const { unfinishedPeople, idlePeople, ...counts } = await store.purgeSignIns(
        t,
        t - unfinishedSignInGraceMs,
        idleBefore,
      );
      let idle = 0;
      for (const uid of idlePeople) {
        try {
          await store.recording(purgeScope()).deleteIdlePerson(uid, idleBefore);
          idle++;
        } catch (err) {
          if (!(err instanceof StoreError)) throw err;
          // Seen, bound or deleted meanwhile: kept, or already gone.
        }
      }
      let people = 0;
      for (const uid of unfinishedPeople) {
        try {
          // A deletion like any other: recorded with it, by the server's upkeep.
          await store.recording(purgeScope()).deleteIdentity(uid);
          people++;
        } catch (err) {
          if (!(err instanceof StoreError)) throw err;
          if (err.kind !== "not_found") {
            log({ identity: uid, reason: err.kind }, "unfinished sign-in kept");
          }
        }
      }
      const report = { ...counts, people, idlePeople: idle };
      if (Object.values(report).some((n) => n > 0)) log(report, "sign-in rows purged");
      return report;
    },
  };
}
