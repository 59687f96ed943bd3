import type { FunctionComponent } from "preact";
import { useEffect, useState } from "preact/hooks";
import type { Group } from "../../gen/gatehouse/iam/v2beta1/groups_pb.js";
import type { Capability } from "../../src/auth/capability-catalog.js";
import { api, type Problem, problemOf } from "./api.js";
import { type Can, useCan } from "./caps.js";
import { ConfirmButton, FormView, ProblemBox } from "./components.js";
import { ancestors } from "./pickers.js";
import { groupHref } from "./routes.js";
import { AccessTab } from "./tabs/access.js";
import { AccessRequestsTab } from "./tabs/access-requests.js";
import { AccountTab } from "./tabs/account.js";
import { AdvisoriesTab } from "./tabs/advisories.js";
import { BindingsTab } from "./tabs/bindings.js";
import { EventsTab } from "./tabs/events.js";
import { IdentitiesTab } from "./tabs/identities.js";
import { InvitesTab } from "./tabs/invites.js";
import { MembersTab } from "./tabs/members.js";
import { PeopleTab } from "./tabs/people.js";
import { ProvidersTab } from "./tabs/providers.js";
import { ReposTab } from "./tabs/repos.js";
import { RolesTab } from "./tabs/roles.js";
import { ScimTab } from "./tabs/scim.js";
import { SubgroupsTab } from "./tabs/subgroups.js";
import { TeamsTab } from "./tabs/teams.js";
import { TreeTab } from "./tabs/tree.js";

/** What the group page hands every tab; each takes the parts it needs. */
interface TabProps {
  uid: string;
  can: Can;
  groupName: string;
}

/**
 * The group page's tabs, in order: the one list of them (test/coverage fails on a tab module
 * not named here). One with a capability is offered only to a caller holding it, one marked
 * `organization` only on an organization's page; a tab not offered is not shown, even at its
 * address.
 */
const tabs: {
  id: string;
  label: string;
  capability?: Capability;
  organization?: true;
  View: FunctionComponent<TabProps>;
}[] = [
  { id: "subgroups", label: "Subgroups", View: SubgroupsTab },
  { id: "tree", label: "Tree", View: TreeTab },
  { id: "members", label: "Members", View: MembersTab },
  { id: "people", label: "People", capability: "people.list", View: PeopleTab },
  { id: "access", label: "Access", View: AccessTab },
  { id: "identities", label: "Identities", View: IdentitiesTab },
  { id: "bindings", label: "Role bindings", View: BindingsTab },
  { id: "teams", label: "Teams", capability: "teams.list", View: TeamsTab },
  { id: "access-requests", label: "Access requests", View: AccessRequestsTab },
  { id: "roles", label: "Roles", View: RolesTab },
  { id: "invites", label: "Invites", View: InvitesTab },
  { id: "providers", label: "Identity providers", View: ProvidersTab },
  // The organization's SCIM connection: its owners' (the API's rule for creating its token).
  {
    id: "scim",
    label: "SCIM",
    capability: "identity_providers.update",
    organization: true,
    View: ScimTab,
  },
  { id: "account", label: "Account association", View: AccountTab },
  { id: "repos", label: "Repos", View: ReposTab },
  { id: "advisories", label: "Advisories", View: AdvisoriesTab },
  { id: "events", label: "Events", capability: "events.list", View: EventsTab },
];

/** A group: breadcrumbs by name, its name and description, and one tab of its resources. */
export function GroupPage({ uid, tab }: { uid: string; tab: string }) {
  const [group, setGroup] = useState<Group | undefined>();
  const [names, setNames] = useState<Record<string, string>>({});
  const [problem, setProblem] = useState<Problem | undefined>();
  const [version, setVersion] = useState(0);
  const can = useCan(uid, version);
  useEffect(() => {
    api.groups
      .getGroup({ uid })
      .then(setGroup)
      .catch((err) => setProblem(problemOf(err)));
    // The ancestors' names in one List, which answers those the caller may read: a Get of each
    // was a 403 in the browser console for every one above a person's role binding.
    api.groups
      .listGroups({ uidp: { ancestorsOf: uid }, pageSize: 200 })
      .then((r) => setNames(Object.fromEntries(r.groups.map((g) => [g.uid, g.name]))))
      .catch(() => undefined);
  }, [uid, version]);
  if (problem) return <ProblemBox problem={problem} />;
  if (!group) return <p>Loading…</p>;
  const offered = tabs.filter(
    ({ capability, organization }) =>
      (!capability || can(capability)) && (!organization || !uid.includes("/")),
  );
  const current = tabs.find((t) => t.id === tab);
  const Active = current && offered.includes(current) ? current.View : undefined;
  return (
    <>
      <nav aria-label="Breadcrumb" class="crumbs">
        <a href="#/">Home</a>
        {ancestors(uid)
          .slice(0, -1)
          .map((a) => (
            <span key={a}>
              {" / "}
              <a href={groupHref(a)}>{names[a] ?? "…"}</a>
            </span>
          ))}
      </nav>
      <h1>{group.name}</h1>
      {group.description && <p>{group.description}</p>}
      <details class="ids">
        <summary>Details</summary>
        <dl>
          <dt>Uid</dt>
          <dd class="uid">{group.uid}</dd>
        </dl>
      </details>
      {(can("groups.update") || can("groups.delete")) && (
        <details>
          <summary>Rename or delete this group</summary>
          {can("groups.update") && (
            <FormView
              title="Rename group"
              submitLabel="Rename"
              fields={[{ name: "name", label: "New name", required: true }]}
              onSubmit={async (v) => {
                await api.groups.updateGroup({
                  group: { uid, name: v.name as string },
                  updateMask: { paths: ["name"] },
                });
                setVersion(version + 1);
              }}
            />
          )}
          {can("groups.delete") && (
            <ConfirmButton
              label="Delete this group"
              confirm={`Delete the group ${group.name}?`}
              action={async () => {
                await api.groups.deleteGroup({ uid });
                const parent = ancestors(uid).slice(-2)[0];
                location.hash = parent && parent !== uid ? groupHref(parent) : "#/";
              }}
            />
          )}
        </details>
      )}
      <nav class="tabs" aria-label="Group sections">
        {offered.map(({ id, label }) => (
          <a key={id} href={groupHref(uid, id)} aria-current={id === tab ? "page" : undefined}>
            {label}
          </a>
        ))}
      </nav>
      {/* On a narrow screen (styles.css) the same links, folded into a menu. */}
      <details class="tab-menu" key={tab}>
        <summary>Section: {current?.label ?? tab}</summary>
        <nav aria-label="Group sections menu">
          {offered.map(({ id, label }) => (
            <a key={id} href={groupHref(uid, id)} aria-current={id === tab ? "page" : undefined}>
              {label}
            </a>
          ))}
        </nav>
      </details>
      <section class="tab">
        {Active && <Active uid={uid} can={can} groupName={group.name} />}
      </section>
    </>
  );
}
