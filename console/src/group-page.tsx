import { useEffect, useState } from "preact/hooks";
import type { Group } from "../../gen/gatehouse/iam/v2beta1/groups_pb.js";
import type { Capability } from "../../src/auth/capability-catalog.js";
import { api, type Problem, problemOf } from "./api.js";
import { useCan } from "./caps.js";
import { ConfirmButton, FormView, ProblemBox } from "./components.js";
import { ancestors } from "./pickers.js";
import { groupHref } from "./routes.js";
import { AccessTab } from "./tabs/access.js";
import { AccountTab } from "./tabs/account.js";
import { AdvisoriesTab } from "./tabs/advisories.js";
import { BindingsTab } from "./tabs/bindings.js";
import { EventsTab } from "./tabs/events.js";
import { IdentitiesTab } from "./tabs/identities.js";
import { InvitesTab } from "./tabs/invites.js";
import { MembersTab } from "./tabs/members.js";
import { ProvidersTab } from "./tabs/providers.js";
import { ReposTab } from "./tabs/repos.js";
import { RolesTab } from "./tabs/roles.js";
import { SubgroupsTab } from "./tabs/subgroups.js";
import { TreeTab } from "./tabs/tree.js";

/** The group page's tabs; one with a capability is offered only to a caller holding it. */
const tabs: [id: string, label: string, capability?: Capability][] = [
  ["subgroups", "Subgroups"],
  ["tree", "Tree"],
  ["members", "Members"],
  ["access", "Access"],
  ["identities", "Identities"],
  ["bindings", "Role bindings"],
  ["roles", "Roles"],
  ["invites", "Invites"],
  ["providers", "Identity providers"],
  ["account", "Account association"],
  ["repos", "Repos"],
  ["advisories", "Advisories"],
  ["events", "Events", "events.list"],
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
    for (const a of ancestors(uid).slice(0, -1)) {
      api.groups
        .getGroup({ uid: a })
        .then((g) => setNames((n) => ({ ...n, [a]: g.name })))
        .catch(() => undefined);
    }
  }, [uid, version]);
  if (problem) return <ProblemBox problem={problem} />;
  if (!group) return <p>Loading…</p>;
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
        {tabs
          .filter(([, , capability]) => !capability || can(capability))
          .map(([id, label]) => (
            <a key={id} href={groupHref(uid, id)} aria-current={id === tab ? "page" : undefined}>
              {label}
            </a>
          ))}
      </nav>
      <section class="tab">
        {tab === "subgroups" && <SubgroupsTab uid={uid} can={can} />}
        {tab === "tree" && <TreeTab uid={uid} groupName={group.name} />}
        {tab === "members" && <MembersTab uid={uid} can={can} />}
        {tab === "access" && <AccessTab uid={uid} groupName={group.name} />}
        {tab === "identities" && <IdentitiesTab uid={uid} can={can} />}
        {tab === "bindings" && <BindingsTab uid={uid} can={can} />}
        {tab === "roles" && <RolesTab uid={uid} can={can} />}
        {tab === "invites" && <InvitesTab uid={uid} can={can} />}
        {tab === "providers" && <ProvidersTab uid={uid} can={can} />}
        {tab === "account" && <AccountTab uid={uid} can={can} />}
        {tab === "repos" && <ReposTab uid={uid} can={can} />}
        {tab === "advisories" && <AdvisoriesTab uid={uid} />}
        {tab === "events" && <EventsTab uid={uid} groupName={group.name} />}
      </section>
    </>
  );
}
