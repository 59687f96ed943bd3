import { describe, expect, it } from "vitest";
import { newPgDatabase } from "../helpers/postgres.js";
import {
  call,
  mintToken,
  pollAnswer,
  type Replica,
  useReplicaPair,
  viewerRoleUid,
} from "../helpers/replicas.js";

// Two `gatehouse serve` processes on one PostgreSQL, with role bindings expiring: past the
// expiry both refuse what the binding granted, though nothing was written (no NOTIFY moves
// their caches), and both sweep at once, yet each expiry is recorded exactly once: the delete
// decides which replica records it. Real clocks, so the test waits on them, polling; how long
// the refusal took past the expiry is printed, never asserted.

/** How many bindings expire at one moment: enough that the two sweeps overlap. */
const bindings = 40;
/** When polling gives up, so that the test stops by itself. */
const giveUpMs = 30_000;

const pair = useReplicaPair(newPgDatabase, "exp", "expiring");

describe("expiring role bindings on two replicas", () => {
  it("both refuse at the expiry with nothing written, and each expiry is recorded once", {
    timeout: 90_000,
  }, async () => {
    const { env, org } = pair;
    const [r0, r1] = pair.replicas;
    const identities: string[] = [];
    const creating = Date.now();
    for (let i = 0; i < bindings; i++) {
      const made = await call(r0.url, "POST", `/iam/v2beta1/identities/${org.orgUid}`, org.token, {
        name: `temporary ${i}`,
        claimMatch: { issuer: "https://ci.example.com", subject: `temporary-${i}` },
      });
      expect(made.status, JSON.stringify(made.body)).toBe(200);
      identities.push(made.body!.uid as string);
    }
    // One expiry for all, far enough ahead for the bindings' creates and the reads before it:
    // three times what as many identity creates just took on this machine, 2 s at least. (A
    // fixed 8 s was mostly waited out: the creates take about a second when it is quiet.)
    const expireMs = Date.now() + Math.max(2_000, 3 * (Date.now() - creating));
    const expireTime = new Date(expireMs).toISOString();
    for (const [i, identityUid] of identities.entries()) {
      const made = await call(
        (i % 2 === 0 ? r0 : r1).url,
        "POST",
        `/iam/v2beta1/roleBindings/${org.orgUid}`,
        org.token,
        { identityUid, roleUid: viewerRoleUid, expireTime },
      );
      expect(made.status, JSON.stringify(made.body)).toBe(200);
      expect(made.body!.expireTime).toBe(expireTime);
    }
    const token = await mintToken(env, identities[0]!);
    const read = (r: Replica) => call(r.url, "GET", `/iam/v2beta1/groups/${org.orgUid}`, token);
    // Each replica has the answer cached before the expiry, if it still lies ahead.
    for (const r of [r0, r1]) {
      const before = await read(r);
      if (Date.now() < expireMs) expect(before.status).toBe(200);
    }

    for (const r of [r0, r1]) {
      const refused = await pollAnswer(
        () => read(r),
        (a) => a.status === 403,
        giveUpMs,
      );
      expect(refused.status).toBe(403);
      console.log(`${r.name}: refused ${Date.now() - expireMs} ms after the expiry`);
    }

    // The sweeps remove every one; then the trail holds one expiry per binding.
    const left = await pollAnswer(
      () =>
        call(
          r1.url,
          "GET",
          `/iam/v2beta1/roleBindings?role=${viewerRoleUid}&uidp.descendantsOf=${org.orgUid}`,
          org.token,
        ),
      (a) =>
        a.status === 200 && ((a.body!.roleBindings as unknown[] | undefined) ?? []).length === 0,
      giveUpMs,
    );
    expect(left.body!.roleBindings ?? []).toEqual([]);
    const trail = await call(
      r0.url,
      "GET",
      `/events/v2beta1/events?name=dev.gatehouse.iam.role_binding.expired.v1&pageSize=200&uidp.descendantsOf=${org.orgUid}`,
      org.token,
    );
    expect(trail.status, JSON.stringify(trail.body)).toBe(200);
    const events = trail.body!.events as {
      subject: string;
      data: { roleBinding: { identity: { uid: string } } };
    }[];
    expect(events).toHaveLength(bindings);
    expect(new Set(events.map((e) => e.subject)).size).toBe(bindings);
    expect(new Set(events.map((e) => e.data.roleBinding.identity.uid))).toEqual(
      new Set(identities),
    );
    const logs = [r0, r1].map((r) => r.log());
    console.log(
      `expired bindings removed per replica: ${logs
        .map((l) => [...l.matchAll(/"removed":(\d+)/g)].reduce((n, m) => n + Number(m[1]), 0))
        .join(", ")}`,
    );
  });
});
