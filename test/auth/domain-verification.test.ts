import { beforeAll, describe, expect, it } from "vitest";
import {
  createDomainVerification,
  domainRecheckMs,
  verificationName,
  verificationRecord,
} from "../../src/auth/oauth/domain-verification.js";
import { uidsByTime } from "../helpers/list-order.js";
import { restCall } from "../helpers/rest-client.js";
import { backends, type TestOrg, useTestServer } from "../helpers/test-server.js";

// A domain claim is verified by the domain's DNS: a TXT record at
// _gatehouse-verification.<domain> naming the provider. The resolver is injected (no real
// DNS); the sign-in lookup answers verified claims first, whenever they were made.

type Found = {
  identityProviders: { uid: string; name: string; organization: string; verified: boolean }[];
};

describe.each(backends)("domain claims on %s", (backend) => {
  let squatter: TestOrg;
  let company: TestOrg;
  const gh = useTestServer({}, { backend });
  beforeAll(async () => {
    squatter = await gh.makeOrg("squatter");
    company = await gh.makeOrg("company");
  });

  /** When each provider claimed its domains: made with them, or given them again by an update. */
  const claimedAt = new Map<string, string>();

  async function provider(org: TestOrg, name: string, emailDomains: string[]): Promise<string> {
    const res = await restCall(
      gh.url,
      "POST",
      `/iam/v2beta1/identityProviders/${org.uid}`,
      { name, emailDomains, oidc: { issuer: "https://sso.example.com", clientId: "c" } },
      org.owner.headers,
    );
    expect(res.status).toBe(200);
    claimedAt.set(res.json.uid, res.json.createTime);
    return res.json.uid as string;
  }

  const lookup = async (domain: string) =>
    ((await (await fetch(`${gh.url}/oauth/identity-providers?domain=${domain}`)).json()) as Found)
      .identityProviders;

  it("verifies a claim whose domain publishes the provider's TXT record, and only that one", async () => {
    const first = await provider(squatter, "early", ["verified-corp.example"]);
    const real = await provider(company, "real", ["verified-corp.example", "other-corp.example"]);
    // The DNS the test plays: the company publishes its provider's record, among others.
    const zone = new Map<string, string[][]>([
      [
        verificationName("verified-corp.example"),
        [
          ["v=spf1 -all"],
          [verificationRecord(real).slice(0, 30), verificationRecord(real).slice(30)],
        ],
      ],
    ]);
    const asked: string[] = [];
    let clock = Date.now();
    const job = createDomainVerification({
      store: gh.store,
      resolveTxt: async (name) => {
        asked.push(name);
        const records = zone.get(name);
        if (!records)
          throw Object.assign(new Error(`queryTxt ENOTFOUND ${name}`), { code: "ENOTFOUND" });
        return records;
      },
      now: () => clock,
      log: () => {},
    });
    // Unverified, the oldest claim comes first (claims of one millisecond by uid).
    expect((await lookup("verified-corp.example")).map((p) => [p.uid, p.verified])).toEqual(
      uidsByTime([first, real], claimedAt).map((uid) => [uid, false]),
    );
    const run = await job.run();
    expect(run.verified).toBe(1);
    expect(asked).toContain("_gatehouse-verification.verified-corp.example");
    // Verified, the company's claim comes first; the squatter's stays unverified.
    expect(await lookup("verified-corp.example")).toEqual([
      { uid: real, name: "real", organization: "company", verified: true },
      { uid: first, name: "early", organization: "squatter", verified: false },
    ]);
    // Another domain of the same provider is not verified by this one's record.
    expect(await lookup("other-corp.example")).toEqual([
      { uid: real, name: "real", organization: "company", verified: false },
    ]);
    // A claim checked lately waits its turn; then it is checked again.
    asked.length = 0;
    await job.run();
    expect(asked).toEqual([]);
    clock += domainRecheckMs;
    zone.set(verificationName("other-corp.example"), [[verificationRecord(first)]]);
    await job.run();
    expect(asked.sort()).toEqual([
      "_gatehouse-verification.other-corp.example",
      "_gatehouse-verification.verified-corp.example",
    ]);
    // Another provider's record verifies nothing for this one.
    expect((await lookup("other-corp.example"))[0]?.verified).toBe(false);
    // Dropped and declared again, a claim is new and unverified.
    for (const domains of [["other-corp.example"], ["verified-corp.example"]]) {
      const res = await restCall(
        gh.url,
        "PATCH",
        `/iam/v2beta1/identityProviders/${real}?update_mask=email_domains`,
        { emailDomains: domains },
        company.owner.headers,
      );
      expect(res.status).toBe(200);
      claimedAt.set(real, res.json.updateTime);
    }
    expect((await lookup("verified-corp.example")).map((p) => [p.uid, p.verified])).toEqual(
      uidsByTime([first, real], claimedAt).map((uid) => [uid, false]),
    );
  });
});
