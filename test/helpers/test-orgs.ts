import { builtinRoles, ownerRole } from "../../src/auth/capabilities.js";
import type { Store } from "../../src/store/store.js";
import { newChildUid, newRootUid } from "../../src/uid.js";

/** An identity and a token for it. */
export interface TestCaller {
  uid: string;
  token: string;
  /** `{ authorization: "Bearer <token>" }`. */
  headers: Record<string, string>;
}

/** An organization and its owner. */
export interface TestOrg {
  uid: string;
  owner: TestCaller;
}

/** What a test makes its callers with, through the store: organizations and identities. */
export interface TestOrgs {
  /** Create an organization owned by a new person (through the store), with the owner's token. */
  makeOrg(name?: string): Promise<TestOrg>;
  /**
   * Create a workload identity in `group` (through the store), bound at `at` (default: the
   * group) to the roles named (built-in names or role uids); returns it with a token.
   */
  makeIdentity(group: string, roles?: readonly string[], at?: string): Promise<TestCaller>;
}

let people = 0;

/**
 * Make organizations and identities in `store`, each with a real token (`tokenFor`: the
 * server's issuer), for a test server on a socket (test-server.ts) or in memory (in-memory.ts).
 */
export function testOrgs(
  store: Store,
  tokenFor: (identityUid: string) => Promise<string>,
): TestOrgs {
  const caller = async (uid: string): Promise<TestCaller> => {
    const token = await tokenFor(uid);
    return { uid, token, headers: { authorization: `Bearer ${token}` } };
  };
  const roleUid = (r: string) => builtinRoles.find((b) => b.name === r)?.uid ?? r;
  return {
    async makeOrg(name = "org") {
      const n = ++people;
      const person = await store.upsertPerson({
        uid: newRootUid(),
        issuer: "https://users.test",
        subject: `person-${n}`,
        name: `Person ${n}`,
        email: "",
        now: Date.now(),
      });
      const uid = newRootUid();
      await store.createOrganization(
        { uid, name, description: "", now: Date.now() },
        { bindingUid: newChildUid(uid), identityUid: person.uid, roleUid: ownerRole.uid },
      );
      return { uid, owner: await caller(person.uid) };
    },
    async makeIdentity(group, roles = [], at = group) {
      const identity = await store.createIdentity({
        uid: newChildUid(group),
        groupUid: group,
        name: `workload ${++people}`,
        description: "",
        claimMatch: {
          issuer: "https://ci.test",
          issuerPattern: "",
          subject: `workload-${people}`,
          subjectPattern: "",
          audience: "",
          audiencePattern: "",
          claims: {},
          claimPatterns: {},
        },
        now: Date.now(),
      });
      for (const r of roles) {
        await store.createRoleBinding({
          uid: newChildUid(at),
          groupUid: at,
          identityUid: identity.uid,
          roleUid: roleUid(r),
          now: Date.now(),
        });
      }
      return caller(identity.uid);
    },
  };
}
