import { useEffect, useState } from "preact/hooks";
import type { Group } from "../../gen/gatehouse/iam/v2beta1/groups_pb.js";
import type { Identity } from "../../gen/gatehouse/iam/v2beta1/identities_pb.js";
import { capabilities } from "../../src/auth/capability-catalog.js";
import { api, type Problem, problemOf } from "./api.js";
import { ConfirmButton, FormView, ListView, ProblemBox, time } from "./components.js";
import { AccountTab, AdvisoriesTab, InvitesTab, ProvidersTab, ReposTab } from "./more-tabs.js";
import { groupHref } from "./routes.js";

const tabs: [id: string, label: string][] = [
  ["subgroups", "Subgroups"],
  ["identities", "Identities"],
  ["bindings", "Role bindings"],
  ["roles", "Roles"],
  ["invites", "Invites"],
  ["providers", "Identity providers"],
  ["account", "Account association"],
  ["repos", "Repos"],
  ["advisories", "Advisories"],
];

/** The root of a uid: its organization. */
export function orgOf(uid: string): string {
  return uid.split("/")[0] ?? uid;
}

/** Every group from the organization down to `uid`. */
function ancestors(uid: string): string[] {
  const parts = uid.split("/");
  return parts.map((_, i) => parts.slice(0, i + 1).join("/"));
}

export function GroupPage({ uid, tab }: { uid: string; tab: string }) {
  const [group, setGroup] = useState<Group | undefined>();
  const [names, setNames] = useState<Record<string, string>>({});
  const [problem, setProblem] = useState<Problem | undefined>();
  const [version, setVersion] = useState(0);
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
      <p class="uid">{group.uid}</p>
      {group.description && <p>{group.description}</p>}
      <details>
        <summary>Rename or delete this group</summary>
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
        <ConfirmButton
          label="Delete this group"
          confirm={`Delete the group ${group.name}?`}
          action={async () => {
            await api.groups.deleteGroup({ uid });
            const parent = ancestors(uid).slice(-2)[0];
            location.hash = parent && parent !== uid ? groupHref(parent) : "#/";
          }}
        />
      </details>
      <nav class="tabs" aria-label="Group sections">
        {tabs.map(([id, label]) => (
          <a key={id} href={groupHref(uid, id)} aria-current={id === tab ? "page" : undefined}>
            {label}
          </a>
        ))}
      </nav>
      <section class="tab">
        {tab === "subgroups" && <SubgroupsTab uid={uid} />}
        {tab === "identities" && <IdentitiesTab uid={uid} />}
        {tab === "bindings" && <BindingsTab uid={uid} />}
        {tab === "roles" && <RolesTab uid={uid} />}
        {tab === "invites" && <InvitesTab uid={uid} />}
        {tab === "providers" && <ProvidersTab uid={uid} />}
        {tab === "account" && <AccountTab uid={uid} />}
        {tab === "repos" && <ReposTab uid={uid} />}
        {tab === "advisories" && <AdvisoriesTab uid={uid} />}
      </section>
    </>
  );
}

function SubgroupsTab({ uid }: { uid: string }) {
  const [reload, setReload] = useState(0);
  return (
    <>
      <h2>Subgroups</h2>
      <ListView<Group>
        label="Subgroups"
        reload={reload}
        load={async (q) => {
          const r = await api.groups.listGroups({ uidp: { childrenOf: uid }, ...q });
          return { items: r.groups, nextPageToken: r.nextPageToken, totalCount: r.totalCount };
        }}
        columns={[
          { title: "Name", render: (g) => <a href={groupHref(g.uid)}>{g.name}</a> },
          { title: "Description", render: (g) => g.description },
          { title: "Created", render: (g) => time(g.createTime) },
        ]}
      />
      <FormView
        title="Create a subgroup"
        submitLabel="Create subgroup"
        fields={[
          { name: "name", label: "Name", required: true },
          { name: "description", label: "Description" },
        ]}
        onSubmit={async (v) => {
          await api.groups.createGroup({
            parent: uid,
            group: { name: v.name as string, description: v.description as string },
          });
          setReload(reload + 1);
        }}
      />
    </>
  );
}

function identityKind(i: Identity): string {
  const m = i.method;
  if (m.case === "claimMatch") return `workload: ${m.value.issuer || m.value.issuerPattern}`;
  if (m.case === "staticKeys") return `workload (static keys): ${m.value.issuer}`;
  return `person${i.email ? ` <${i.email}>` : ""}`;
}

function IdentitiesTab({ uid }: { uid: string }) {
  const [reload, setReload] = useState(0);
  const [selected, setSelected] = useState<Identity | undefined>();
  return (
    <>
      <h2>Identities</h2>
      <ListView<Identity>
        label="Identities"
        reload={reload}
        load={async (q) => {
          const r = await api.identities.listIdentities({ uidp: { childrenOf: uid }, ...q });
          return { items: r.identities, nextPageToken: r.nextPageToken, totalCount: r.totalCount };
        }}
        columns={[
          {
            title: "Name",
            render: (i) => (
              <button type="button" class="link" onClick={() => setSelected(i)}>
                {i.name}
              </button>
            ),
          },
          { title: "Kind", render: identityKind },
          { title: "Uid", render: (i) => <span class="uid">{i.uid}</span> },
        ]}
      />
      {selected && (
        <section class="detail" aria-label={`Identity ${selected.name}`}>
          <h3>{selected.name}</h3>
          <p class="uid">{selected.uid}</p>
          <p>{identityKind(selected)}</p>
          {selected.method.case === "claimMatch" && (
            <p>
              subject:{" "}
              <code>{selected.method.value.subject || selected.method.value.subjectPattern}</code>
            </p>
          )}
          <FormView
            title="Edit identity"
            submitLabel="Save"
            fields={[
              { name: "name", label: "Name", initial: selected.name },
              { name: "description", label: "Description", initial: selected.description },
            ]}
            onSubmit={async (v) => {
              const updated = await api.identities.updateIdentity({
                identity: {
                  uid: selected.uid,
                  name: v.name as string,
                  description: v.description as string,
                },
                updateMask: { paths: ["name", "description"] },
              });
              setSelected(updated);
              setReload(reload + 1);
            }}
          />
          <ConfirmButton
            label="Delete identity"
            confirm={`Delete the identity ${selected.name}?`}
            action={async () => {
              await api.identities.deleteIdentity({ uid: selected.uid });
              setSelected(undefined);
              setReload(reload + 1);
            }}
          />
        </section>
      )}
      <FormView
        title="Create a workload identity"
        submitLabel="Create identity"
        fields={[
          { name: "name", label: "Name", required: true },
          { name: "issuer", label: "Issuer (https URL of the workload's OIDC issuer)" },
          { name: "subject", label: "Subject (exact)" },
          { name: "subjectPattern", label: "or subject pattern (RE2)" },
          { name: "audience", label: "Audience (default: this server)" },
        ]}
        onSubmit={async (v) => {
          await api.identities.createIdentity({
            parent: uid,
            identity: {
              name: v.name as string,
              method: {
                case: "claimMatch",
                value: {
                  issuer: v.issuer as string,
                  subject: v.subject as string,
                  subjectPattern: v.subjectPattern as string,
                  audience: v.audience as string,
                },
              },
            },
          });
          setReload(reload + 1);
        }}
      />
    </>
  );
}

/** Options for pickers: the organization's identities and people, and the roles it can use. */
function usePickers(uid: string, reload: number) {
  const [identities, setIdentities] = useState<{ value: string; label: string }[]>([]);
  const [roles, setRoles] = useState<{ value: string; label: string }[]>([]);
  useEffect(() => {
    const org = orgOf(uid);
    Promise.all([
      api.identities.listIdentities({ uidp: { descendantsOf: org }, pageSize: 200 }),
      api.bindings.listRoleBindings({ uidp: { descendantsOf: org }, pageSize: 200 }),
    ])
      .then(([ids, bindings]) => {
        const seen = new Map<string, string>();
        for (const i of ids.identities) seen.set(i.uid, i.name);
        for (const b of bindings.roleBindings) {
          if (b.identity && !seen.has(b.identity.uid))
            seen.set(b.identity.uid, `${b.identity.name} (person)`);
        }
        setIdentities([...seen].map(([value, label]) => ({ value, label })));
      })
      .catch(() => undefined);
    api.roles
      .listRoles({ pageSize: 200 })
      .then((r) => setRoles(r.roles.map((x) => ({ value: x.uid, label: x.name }))))
      .catch(() => undefined);
  }, [uid, reload]);
  return { identities, roles };
}

export { usePickers };

function BindingsTab({ uid }: { uid: string }) {
  const [reload, setReload] = useState(0);
  const { identities, roles } = usePickers(uid, reload);
  return (
    <>
      <h2>Role bindings</h2>
      <ListView
        label="Role bindings"
        reload={reload}
        load={async (q) => {
          const r = await api.bindings.listRoleBindings({ group: uid, ...q });
          return {
            items: r.roleBindings,
            nextPageToken: r.nextPageToken,
            totalCount: r.totalCount,
          };
        }}
        columns={[
          { title: "Identity", render: (b) => b.identity?.name ?? "" },
          { title: "Role", render: (b) => b.role?.name ?? "" },
          { title: "Group", render: (b) => b.group?.name ?? "" },
          {
            title: "Revoke",
            render: (b) => (
              <ConfirmButton
                label="Revoke"
                confirm={`Revoke ${b.role?.name} from ${b.identity?.name}?`}
                action={async () => {
                  await api.bindings.deleteRoleBinding({ uid: b.uid });
                  setReload(reload + 1);
                }}
              />
            ),
          },
        ]}
      />
      <FormView
        title="Grant a role"
        submitLabel="Grant"
        fields={[
          { name: "identityUid", label: "Identity", type: "select", options: identities },
          { name: "roleUid", label: "Role", type: "select", options: roles },
        ]}
        onSubmit={async (v) => {
          await api.bindings.createRoleBinding({
            parent: uid,
            roleBinding: { identityUid: v.identityUid as string, roleUid: v.roleUid as string },
          });
          setReload(reload + 1);
        }}
      />
    </>
  );
}

function RolesTab({ uid }: { uid: string }) {
  const [reload, setReload] = useState(0);
  return (
    <>
      <h2>Roles</h2>
      <p>Built-in roles exist everywhere; custom roles belong to a group and those below it.</p>
      <ListView
        label="Roles"
        reload={reload}
        load={async (q) => {
          const r = await api.roles.listRoles(q);
          return { items: r.roles, nextPageToken: r.nextPageToken, totalCount: r.totalCount };
        }}
        columns={[
          { title: "Name", render: (r) => r.name },
          { title: "Kind", render: (r) => (r.uid.includes("/") ? "custom" : "built-in") },
          { title: "Capabilities", render: (r) => r.capabilities.join(", ") },
          {
            title: "Delete",
            render: (r) =>
              r.uid.includes("/") ? (
                <ConfirmButton
                  label="Delete"
                  confirm={`Delete the role ${r.name}?`}
                  action={async () => {
                    await api.roles.deleteRole({ uid: r.uid });
                    setReload(reload + 1);
                  }}
                />
              ) : (
                ""
              ),
          },
        ]}
      />
      <FormView
        title="Create a custom role"
        submitLabel="Create role"
        fields={[
          { name: "name", label: "Name", required: true },
          { name: "description", label: "Description" },
          {
            name: "capabilities",
            label: "Capabilities",
            type: "checkboxes",
            options: capabilities.map((c) => ({ value: c, label: c })),
          },
        ]}
        onSubmit={async (v) => {
          await api.roles.createRole({
            parent: uid,
            role: {
              name: v.name as string,
              description: v.description as string,
              capabilities: v.capabilities as string[],
            },
          });
          setReload(reload + 1);
        }}
      />
    </>
  );
}
