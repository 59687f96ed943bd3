import { describe, expect, it } from "vitest";
import { newPgDatabase } from "../helpers/postgres.js";
import {
  type Answer,
  call,
  mintToken,
  type Replica,
  useReplicaPair,
  viewerRoleUid,
} from "../helpers/replicas.js";

// Two `gatehouse serve` processes on one PostgreSQL: a team's membership changes, and its
// deletion, reach the other replica's access cache as a binding's delete does (the change
// feed), so a member removed through one replica is refused by the other soon after.

/** How long the other replica may take (design: the NOTIFY delivery time); printed, not timed. */
const boundMs = 5_000;

const pair = useReplicaPair(newPgDatabase, "team", "acme");

/** Ask `ask` until `until` holds or the bound passes; the last answer and whether it held. */
async function pollUntil(ask: () => Promise<Answer>, until: (a: Answer) => boolean) {
  const from = performance.now();
  let answer = await ask();
  while (!until(answer) && performance.now() - from < boundMs) answer = await ask();
  return { held: until(answer), ms: performance.now() - from };
}

describe("teams on two replicas", () => {
  it("ends a removed member's and a deleted team's access on the other replica", {
    timeout: 60_000,
  }, async () => {
    const { env, org } = pair;
    const [r0, r1] = pair.replicas;
    const made = await call(r0.url, "POST", `/iam/v2beta1/identities/${org.orgUid}`, org.token, {
      name: "member",
      claimMatch: { issuer: "https://ci.example.com", subject: "member" },
    });
    expect(made.status, JSON.stringify(made.body)).toBe(200);
    const member = made.body!.uid as string;
    const token = await mintToken(env, member);
    const read = (r: Replica) =>
      call(r.url, "GET", `/iam/v2beta1/groups/${org.orgUid}`, token, undefined, 5_000);
    const team = await call(r0.url, "POST", `/iam/v2beta1/teams/${org.orgUid}`, org.token, {
      name: "readers",
    });
    expect(team.status, JSON.stringify(team.body)).toBe(200);
    const teamUid = team.body!.uid as string;
    const bound = await call(r0.url, "POST", `/iam/v2beta1/roleBindings/${org.orgUid}`, org.token, {
      teamUid,
      roleUid: viewerRoleUid,
    });
    expect(bound.status, JSON.stringify(bound.body)).toBe(200);
    // Not a member yet: both refuse, and cache that answer.
    for (const r of pair.replicas) expect((await read(r)).status).toBe(403);

    const members = (verb: string) =>
      call(r0.url, "POST", `/iam/v2beta1/teams/${teamUid}:${verb}`, org.token, {
        identityUids: [member],
      });
    const timings: string[] = [];
    for (let k = 0; k < 3; k++) {
      expect((await members("addMembers")).status).toBe(200);
      expect((await read(r0)).status).toBe(200);
      const granted = await pollUntil(
        () => read(r1),
        (a) => a.status === 200,
      );
      expect(granted.held, "r1 never saw the membership").toBe(true);
      expect((await members("removeMembers")).status).toBe(200);
      expect((await read(r0)).status).toBe(403);
      const refused = await pollUntil(
        () => read(r1),
        (a) => a.status === 403,
      );
      expect(refused.held, "r1 still lets the removed member read").toBe(true);
      timings.push(`${granted.ms.toFixed(1)}/${refused.ms.toFixed(1)} ms`);
    }
    // A deleted team ends what it gave as well, through the other replica this time.
    expect((await members("addMembers")).status).toBe(200);
    expect(
      (
        await pollUntil(
          () => read(r0),
          (a) => a.status === 200,
        )
      ).held,
    ).toBe(true);
    expect((await call(r1.url, "DELETE", `/iam/v2beta1/teams/${teamUid}`, org.token)).status).toBe(
      200,
    );
    expect((await read(r1)).status).toBe(403);
    const gone = await pollUntil(
      () => read(r0),
      (a) => a.status === 403,
    );
    expect(gone.held, "r0 still honours the deleted team").toBe(true);
    console.log(
      `team membership on the other replica, granted/refused after: ${timings.join(", ")}; team delete: ${gone.ms.toFixed(1)} ms`,
    );
  });
});
