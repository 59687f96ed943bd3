import { type Client, createClient, type Transport } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GroupInvitesService } from "../../gen/gatehouse/iam/v2beta1/group_invites_pb.js";
import {
  PeopleService,
  type Person,
  Person_Origin,
} from "../../gen/gatehouse/iam/v2beta1/people_pb.js";
import { builtinRoles } from "../../src/auth/capabilities.js";
import { providerPersonUid } from "../../src/auth/login/person.js";
import { cliAuthorizeUrl, cliRedirect, newPkce, redeemCode } from "../helpers/cli-sign-in.js";
import { connectTransports } from "../helpers/groups-clients.js";
import { failure, iamClients, transportFor } from "../helpers/iam-clients.js";
import { restCall } from "../helpers/rest-client.js";
import { runCli } from "../helpers/run-cli.js";
import { signInAtIdp, startTestIdp, type TestIdp } from "../helpers/test-idp.js";
import {
  backends,
  freePort,
  startTestServer,
  type TestOrg,
  type TestServer,
} from "../helpers/test-server.js";

// An owner's view of the people of their organization (issue 39 item 5): names and verified
// emails, how each came, last sign-in, roles; search and paging; sessions listed and ended at
// once, on every replica. People sign in for real, through the organization's provider and
// through the server's login provider, and the API is called with connect-node, gRPC and fetch.

const viewer = builtinRoles.find((r) => r.name === "viewer")!.uid;
const editor = builtinRoles.find((r) => r.name === "editor")!.uid;

interface Tokens {
  access: string;
  refresh: string;
}

describe.each(backends)("the people of an organization on %s", (backend) => {
  let gh: TestServer;
  /** A second server on the same database (PostgreSQL only): another replica. */
  let replica: TestServer | undefined;
  let idp: TestIdp;
  let org: TestOrg;
  let other: TestOrg;
  let provider: string;
  let people: Client<typeof PeopleService>;

  /** Sign `account` in through the CLI's flow (`via` a provider uid, or the login provider). */
  async function signIn(account: string, via?: string): Promise<Tokens> {
    const pkce = newPkce();
    const url = cliAuthorizeUrl(gh.url, pkce.challenge, via ? { identity_provider: via } : {});
    const back = await signInAtIdp(url, account, cliRedirect);
    const code = back.searchParams.get("code");
    expect(code, back.searchParams.get("error_description") ?? "").not.toBeNull();
    const res = await redeemCode(gh.url, code!, pkce.verifier);
    expect(res.status).toBe(200);
    const json = (await res.json()) as { access_token: string; refresh_token: string };
    return { access: json.access_token, refresh: json.refresh_token };
  }

  const callerWith = (base: string, token: string) =>
    restCall(base, "GET", "/iam/v2beta1/caller", undefined, { authorization: `Bearer ${token}` });
  const refresh = (token: string) =>
    fetch(`${gh.url}/oauth/token`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({
        grant_type: "refresh_token",
        refresh_token: token,
        client_id: "gatehouse-cli",
      }),
    });

  beforeAll(async () => {
    const port = await freePort();
    idp = await startTestIdp({
      redirectUri: `http://127.0.0.1:${port}/oauth/callback`,
      people: {
        ada: { name: "Ada Lovelace", email: "ada@example.com", email_verified: true },
        alan: { name: "Alan Turing", email: "alan@example.com", email_verified: true },
        grace: { name: "Grace Hopper", email: "grace@example.com", email_verified: true },
        hedy: { name: "Hedy Lamarr", email: "hedy@example.com", email_verified: true },
      },
    });
    gh = await startTestServer(
      {
        GATEHOUSE_LOGIN_ISSUER: idp.issuer,
        GATEHOUSE_LOGIN_CLIENT_ID: idp.clientId,
        GATEHOUSE_LOGIN_CLIENT_SECRET: idp.clientSecret,
        GATEHOUSE_ALLOW_INSECURE_LOOPBACK_ISSUERS: "true",
        GATEHOUSE_ALLOW_PRIVATE_ISSUER_ADDRESSES: "true",
      },
      { port, backend },
    );
    if (backend === "postgres") {
      replica = await startTestServer({
        GATEHOUSE_DATABASE_URL: gh.config.databaseUrl,
        GATEHOUSE_BASE_URL: gh.config.baseUrl,
      });
    }
    org = await gh.makeOrg("acme");
    other = await gh.makeOrg("other");
    const made = await restCall(
      gh.url,
      "POST",
      `/iam/v2beta1/identityProviders/${org.uid}`,
      {
        name: "Acme SSO",
        defaultRole: viewer,
        oidc: { issuer: idp.issuer, clientId: idp.clientId, clientSecret: idp.clientSecret },
      },
      org.owner.headers,
    );
    expect(made.status).toBe(200);
    provider = made.json.uid;
    idp.setRedirectUris([`${gh.url}/oauth/callback`, `${gh.url}/oauth/idp-callback/${provider}`]);
    people = createClient(PeopleService, transportFor("connect", gh.url, org.owner.headers));
  });

  afterAll(async () => {
    await replica?.close();
    await gh?.close();
    await idp?.close();
  });

  it("shows an owner the names, emails, origins, sign-ins and roles of their people", async () => {
    const before = Date.now();
    await signIn("ada", provider);
    await signIn("alan", provider);
    // Grace signs in through the server's login provider and redeems an invite of acme.
    const grace = await signIn("grace");
    const invite = await createClient(
      GroupInvitesService,
      transportFor("connect", gh.url, org.owner.headers),
    ).createGroupInvite({ parent: org.uid, groupInvite: { roleUid: viewer } });
    const graceInvites = createClient(
      GroupInvitesService,
      transportFor("connect", gh.url, { authorization: `Bearer ${grace.access}` }),
    );
    await graceInvites.redeemGroupInvite({ code: invite.code! });

    const ada = providerPersonUid(provider, idp.issuer, "ada");
    // Over REST with fetch: the owner searches by email.
    const found = await restCall(
      gh.url,
      "GET",
      `/iam/v2beta1/people?group_uid=${org.uid}&query=ADA%40example`,
      undefined,
      org.owner.headers,
    );
    expect(found.status).toBe(200);
    expect(found.json.people).toHaveLength(1);
    const person = found.json.people[0];
    expect(person).toMatchObject({
      uid: ada,
      name: "Ada Lovelace",
      email: "ada@example.com",
      origin: "ORIGIN_IDENTITY_PROVIDER",
      identityProviderUid: provider,
    });
    expect(Date.parse(person.lastSignInTime)).toBeGreaterThanOrEqual(before - 1000);
    expect(person.roleBindings.map((b: { role: { name: string } }) => b.role.name)).toEqual([
      "viewer",
    ]);

    // Over Connect: everyone, by name, with how each came.
    const all = await people.listPeople({ groupUid: org.uid, orderBy: "name" });
    const byName = Object.fromEntries(all.people.map((p) => [p.name, p]));
    expect(Object.keys(byName)).toEqual(
      expect.arrayContaining(["Ada Lovelace", "Alan Turing", "Grace Hopper"]),
    );
    expect(byName["Grace Hopper"]).toMatchObject({
      email: "grace@example.com",
      origin: Person_Origin.INVITE,
    });
    expect(byName["Alan Turing"]?.origin).toBe(Person_Origin.IDENTITY_PROVIDER);
    // The organization's creator came by plain sign-in.
    expect(all.people.find((p) => p.uid === org.owner.uid)?.origin).toBe(Person_Origin.SIGN_IN);
    expect((await people.getPerson({ uid: ada, groupUid: org.uid })).email).toBe("ada@example.com");

    // Never another organization's person, and never to another organization's owner.
    expect(
      (await failure(people.getPerson({ uid: other.owner.uid, groupUid: org.uid }))).code,
    ).toBe(5);
    const outsider = createClient(
      PeopleService,
      transportFor("connect", gh.url, other.owner.headers),
    );
    expect((await failure(outsider.listPeople({ groupUid: org.uid }))).code).toBe(7);
    expect((await outsider.listPeople({ groupUid: other.uid })).people.map((p) => p.uid)).toEqual([
      other.owner.uid,
    ]);
    // A viewer of the organization sees no emails: people.list is the owners'.
    const grant = createClient(
      PeopleService,
      transportFor("connect", gh.url, { authorization: `Bearer ${grace.access}` }),
    );
    expect((await failure(grant.listPeople({ groupUid: org.uid }))).code).toBe(7);
  });

  it("pages people with tokens bound to the search", async () => {
    const first = await people.listPeople({ groupUid: org.uid, pageSize: 1, orderBy: "name" });
    expect(first.people).toHaveLength(1);
    expect(first.totalCount).toBeGreaterThanOrEqual(4n);
    expect(first.nextPageToken).toBeTruthy();
    const second = await people.listPeople({
      groupUid: org.uid,
      pageSize: 1,
      orderBy: "name",
      pageToken: first.nextPageToken!,
    });
    expect(second.people[0]!.name > first.people[0]!.name).toBe(true);
    const misuse = await failure(
      people.listPeople({
        groupUid: org.uid,
        query: "a",
        pageSize: 1,
        orderBy: "name",
        pageToken: first.nextPageToken!,
      }),
    );
    expect(misuse.code).toBe(3);
    expect(
      (await failure(people.listPeople({ groupUid: org.uid, query: "x".repeat(300) }))).code,
    ).toBe(3);
  });

  it("lists a person's sessions and ends one, then all, at once on every replica", async () => {
    const first = await signIn("alan", provider);
    const second = await signIn("alan", provider);
    const alan = providerPersonUid(provider, idp.issuer, "alan");
    const servers = [gh.url, ...(replica ? [replica.url] : [])];
    for (const url of servers) expect((await callerWith(url, first.access)).status).toBe(200);

    const listed = await people.listPersonSessions({ personUid: alan, groupUid: org.uid });
    // Two sessions from this test, one from the first (its code was redeemed, not revoked).
    expect(listed.sessions.length).toBeGreaterThanOrEqual(2);
    expect(listed.sessions.every((s) => s.clientId === "gatehouse-cli")).toBe(true);
    const sid = (token: string) =>
      JSON.parse(Buffer.from(token.split(".")[1]!, "base64url").toString()).sid as string;
    expect(listed.sessions.map((s) => s.id)).toEqual(
      expect.arrayContaining([sid(first.access), sid(second.access)]),
    );

    // Over gRPC: end the first session only.
    const grpcPeople = createClient(PeopleService, transportFor("grpc", gh.url, org.owner.headers));
    const one = await grpcPeople.revokePersonSessions({
      personUid: alan,
      groupUid: org.uid,
      sessionId: sid(first.access),
    });
    expect(one.revokedCount).toBe(1);
    for (const url of servers) {
      const refused = await callerWith(url, first.access);
      expect(refused.status).toBe(401);
      expect(refused.auth).toContain("invalid_token");
      expect((await callerWith(url, second.access)).status).toBe(200);
    }
    expect((await refresh(first.refresh)).status).toBe(400);
    // Ending it again: it is no longer there to end.
    const again = await failure(
      grpcPeople.revokePersonSessions({
        personUid: alan,
        groupUid: org.uid,
        sessionId: sid(first.access),
      }),
    );
    expect(again.code).toBe(5);

    // Then all of them.
    const all = await people.revokePersonSessions({ personUid: alan, groupUid: org.uid });
    expect(all.revokedCount).toBeGreaterThanOrEqual(1);
    for (const url of servers) expect((await callerWith(url, second.access)).status).toBe(401);
    expect((await refresh(second.refresh)).status).toBe(400);
    expect(
      (await people.listPersonSessions({ personUid: alan, groupUid: org.uid })).sessions,
    ).toEqual([]);

    // Recorded in the organization's audit trail, by its owner.
    const events = await restCall(
      gh.url,
      "GET",
      `/events/v2beta1/events?uidp.descendantsOf=${org.uid}&type=dev.gatehouse.iam.person_sessions.revoked.v1`,
      undefined,
      org.owner.headers,
    );
    expect(events.status).toBe(200);
    expect(events.json.events.length).toBe(2);
  });

  it("counts and shows people who hold a role only through a team, on every protocol", async () => {
    const asOwner = iamClients(transportFor("connect", gh.url, org.owner.headers));
    const hedyTokens = await signIn("hedy");
    const hedy = (await callerWith(gh.url, hedyTokens.access)).json.identity.uid as string;
    const countAt = async (group: string) =>
      (await people.listPeople({ groupUid: group, pageSize: 1 })).totalCount;
    const before = await countAt(org.uid);
    expect((await failure(people.getPerson({ uid: hedy, groupUid: org.uid }))).code).toBe(5);

    // Hedy joins by invite (viewer at acme), then holds editor at acme/prod through the team
    // "ops" and is in the team "idle" too, which holds nothing; the owner is in "ops" as well.
    const invite = await asOwner.groupInvites.createGroupInvite({
      parent: org.uid,
      groupInvite: { roleUid: viewer },
    });
    await createClient(
      GroupInvitesService,
      transportFor("connect", gh.url, { authorization: `Bearer ${hedyTokens.access}` }),
    ).redeemGroupInvite({ code: invite.code! });
    const prod = await asOwner.groups.createGroup({ parent: org.uid, group: { name: "prod" } });
    const ops = await asOwner.teams.createTeam({ parent: org.uid, team: { name: "ops" } });
    const idle = await asOwner.teams.createTeam({ parent: org.uid, team: { name: "idle" } });
    await asOwner.roleBindings.createRoleBinding({
      parent: prod.uid,
      roleBinding: { teamUid: ops.uid, roleUid: editor },
    });
    await asOwner.teams.addTeamMembers({ uid: ops.uid, identityUids: [hedy, org.owner.uid] });
    await asOwner.teams.addTeamMembers({ uid: idle.uid, identityUids: [hedy] });
    // Her own binding goes: from now on she holds a role only through "ops".
    const own = await asOwner.roleBindings.listRoleBindings({ identity: hedy });
    expect(own.roleBindings).toHaveLength(1);
    await asOwner.roleBindings.deleteRoleBinding({ uid: own.roleBindings[0]!.uid });

    /** A person as the test compares them, from any wire. */
    const shape = (p: Person) => ({
      uid: p.uid,
      teams: p.teams.map((t) => `${t.name} ${t.uid}`),
      roles: p.roleBindings.map((b) => `${b.role?.name}@${b.group?.name} team=${b.team?.name}`),
    });
    const atOrg = {
      uid: hedy,
      teams: [`idle ${idle.uid}`, `ops ${ops.uid}`],
      roles: ["editor@prod team=ops"],
    };
    // At prod: through "ops" only ("idle" neither lives nor holds anything there).
    const atProd = { ...atOrg, teams: [`ops ${ops.uid}`] };

    // Over REST with fetch, searched by email.
    for (const [group, want] of [
      [org.uid, atOrg],
      [prod.uid, atProd],
    ] as const) {
      const found = await restCall(
        gh.url,
        "GET",
        `/iam/v2beta1/people?groupUid=${encodeURIComponent(group)}&query=HEDY%40`,
        undefined,
        org.owner.headers,
      );
      expect(found.status).toBe(200);
      expect(found.json.totalCount).toBe("1");
      const p = found.json.people[0];
      expect({
        uid: p.uid,
        teams: p.teams.map((t: { name: string; uid: string }) => `${t.name} ${t.uid}`),
        roles: p.roleBindings.map(
          (b: { role: { name: string }; group: { name: string }; team?: { name: string } }) =>
            `${b.role.name}@${b.group.name} team=${b.team?.name}`,
        ),
      }).toEqual(want);
    }
    // Over Connect, gRPC-Web and gRPC: listed, fetched, counted once; paging finds everyone
    // once (the owner is bound and in "ops": still one person).
    for (const [wire, transport] of Object.entries(connectTransports(gh.url, org.owner.headers))) {
      const client = createClient(PeopleService, transport as Transport);
      const found = await client.listPeople({ groupUid: prod.uid, query: "lamarr" });
      expect(found.people.map(shape), wire).toEqual([atProd]);
      expect(shape(await client.getPerson({ uid: hedy, groupUid: org.uid })), wire).toEqual(atOrg);
      const seen: string[] = [];
      let token = "";
      let total = 0n;
      do {
        const page = await client.listPeople({
          groupUid: org.uid,
          pageSize: 2,
          orderBy: "name",
          pageToken: token,
        });
        seen.push(...page.people.map((p) => p.uid));
        total = page.totalCount;
        token = page.nextPageToken ?? "";
      } while (token !== "");
      expect(total, wire).toBe(before + 1n);
      expect(seen.length, wire).toBe(Number(total));
      expect(new Set(seen).size, wire).toBe(seen.length);
      expect(seen, wire).toEqual(expect.arrayContaining([hedy, org.owner.uid]));
    }

    // The owner's own roles say which come through a team.
    const owner = await people.getPerson({ uid: org.owner.uid, groupUid: org.uid });
    expect(shape(owner).roles).toEqual(
      expect.arrayContaining(["owner@acme team=undefined", "editor@prod team=ops"]),
    );

    // The CLI's line ends with her roles, each saying its team, and her teams.
    const cli = await runCli(
      ["iam", "person", "--uid", hedy, "--group-uid", org.uid, "--output", "table"],
      { GATEHOUSE_API: gh.url, GATEHOUSE_TOKEN: org.owner.token },
    );
    expect(cli.stderr).toBe("");
    expect(cli.stdout).toMatch(/\teditor@prod via team ops\tidle,ops\n$/);

    // Out of "ops", she is no longer one of prod's people, at once; out of "idle" too, no
    // longer one of acme's either.
    await asOwner.teams.removeTeamMembers({ uid: ops.uid, identityUids: [hedy] });
    expect((await failure(people.getPerson({ uid: hedy, groupUid: prod.uid }))).code).toBe(5);
    expect(shape(await people.getPerson({ uid: hedy, groupUid: org.uid }))).toEqual({
      uid: hedy,
      teams: [`idle ${idle.uid}`],
      roles: [],
    });
    await asOwner.teams.removeTeamMembers({ uid: idle.uid, identityUids: [hedy] });
    expect((await failure(people.getPerson({ uid: hedy, groupUid: org.uid }))).code).toBe(5);
    expect(await countAt(org.uid)).toBe(before);
  });

  it("refuses bad input with INVALID_ARGUMENT, not a server error", async () => {
    const bad = await failure(people.getPerson({ uid: "not a uid", groupUid: org.uid }));
    expect(bad.code).toBe(3);
    const noGroup = await failure(people.listPeople({}));
    expect(noGroup.code).toBe(3);
    const badSession = await failure(
      people.revokePersonSessions({
        personUid: org.owner.uid,
        groupUid: org.uid,
        sessionId: "no such/session",
      }),
    );
    expect(badSession.code).toBe(3);
  });
});
