import { expect, it } from "vitest";
import { axeViolations, describeInBrowser, useConsoleSuite } from "../helpers/browser.js";
import { restCall } from "../helpers/rest-client.js";

// The console's Teams tab, in headless Chromium against a real server: an owner creates a
// team, adds a member by uid and grants the team a role; the team's members, its role and the
// binding in the Role bindings tab show, and the API agrees.

describeInBrowser("teams in the console", () => {
  const ui = useConsoleSuite({ org: "teams-console" });
  const { gh, org } = ui;

  it("creates a team, adds a member, grants it a role, and the binding shows", async () => {
    const worker = await gh.makeIdentity(org.uid);
    const workerName = (await gh.store.getIdentity(worker.uid))!.name;
    const page = await ui.freshPage();
    await ui.signIn(org.owner.token);
    await page.goto(`${gh.url}/console/#/group/${encodeURIComponent(org.uid)}`);
    await page.getByRole("navigation", { name: "Group sections" }).getByText("Teams").click();

    const create = page.getByRole("form", { name: "Create a team" });
    await create.getByLabel("Name", { exact: true }).fill("oncall");
    await create.getByLabel("Description", { exact: true }).fill("who answers the pager");
    await create.getByRole("button", { name: "Create team" }).click();
    const teams = page.getByRole("region", { name: "Teams" });
    await teams.getByRole("cell", { name: "who answers the pager" }).waitFor();
    await teams.getByRole("button", { name: "Members of oncall" }).click();

    const members = page.getByRole("region", { name: "Members of oncall" });
    await members.getByText("No member yet.").waitFor();
    const add = members.getByRole("form", { name: "Add a member" });
    await add.getByLabel("Identity uid", { exact: true }).fill(worker.uid);
    await add.getByRole("button", { name: "Add member" }).click();
    await members.getByRole("cell", { name: workerName, exact: true }).waitFor();
    await teams.getByRole("row", { name: /oncall who answers the pager 1/ }).waitFor();

    const grant = members.getByRole("form", { name: "Grant a role to oncall" });
    await grant.getByLabel("Role", { exact: true }).selectOption({ label: "viewer" });
    await grant.getByRole("button", { name: "Grant to team" }).click();
    await members.getByText("viewer at teams-console").waitFor();
    expect(await axeViolations(page)).toEqual([]);

    // What the API holds: the team, its one member, and a binding of viewer to it.
    const listed = await restCall(
      gh.url,
      "GET",
      `/iam/v2beta1/teams?uidp.childrenOf=${org.uid}`,
      undefined,
      org.owner.headers,
    );
    expect(listed.json.teams).toMatchObject([
      { name: "oncall", description: "who answers the pager", memberCount: "1" },
    ]);
    const teamUid = listed.json.teams[0].uid as string;
    const bound = await restCall(
      gh.url,
      "GET",
      `/iam/v2beta1/roleBindings?group=${org.uid}&team=${teamUid}`,
      undefined,
      org.owner.headers,
    );
    expect(bound.json.roleBindings).toMatchObject([
      { team: { uid: teamUid, name: "oncall" }, role: { name: "viewer" } },
    ]);

    // The Role bindings tab names the team.
    await page
      .getByRole("navigation", { name: "Group sections" })
      .getByText("Role bindings")
      .click();
    await page.getByRole("row", { name: /team oncall viewer/ }).waitFor();
  });
});
