import { useEffect, useState } from "preact/hooks";
import type { IdentityRef } from "../../gen/gatehouse/common/v2beta1/common_pb.js";
import type { Group } from "../../gen/gatehouse/iam/v2beta1/groups_pb.js";
import type { Identity } from "../../gen/gatehouse/iam/v2beta1/identities_pb.js";
import type { RoleBinding } from "../../gen/gatehouse/iam/v2beta1/role_bindings_pb.js";
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

/** The claimMatch fields of the create and edit forms, in the API's own (camelCase) names. */
const claimMatchFields = [
  ["issuer", "Issuer (https URL of the workload's OIDC issuer)"],
  ["issuerPattern", "or issuer pattern (RE2, e.g. https://ci\\.example\\.com/.*)"],
  ["subject", "Subject (exact)"],
  ["subjectPattern", "or subject pattern (RE2)"],
  ["audience", "Audience (default: this server)"],
  ["audiencePattern", "or audience pattern (RE2)"],
] as const;

type ClaimMatchKey = (typeof claimMatchFields)[number][0];

function claimMatchOf(v: Record<string, string | string[]>): Record<ClaimMatchKey, string> {
  return Object.fromEntries(
    claimMatchFields.map(([k]) => [k, ((v[k] as string | undefined) ?? "").trim()]),
  ) as Record<ClaimMatchKey, string>;
}

/** One identity: what it matches, and (for a workload) the edit form and delete. */
function IdentityDetail(props: {
  identity: Identity;
  onChange: (updated: Identity | undefined) => void;
}) {
  const i = props.identity;
  const cm = i.method.case === "claimMatch" ? i.method.value : undefined;
  return (
    <section class="detail" aria-label={`Identity ${i.name}`}>
      <h3>{i.name}</h3>
      <p class="uid">{i.uid}</p>
      <p>{identityKind(i)}</p>
      {cm && (
        <dl>
          <dt>Issuer</dt>
          <dd>
            <code>{cm.issuer || `${cm.issuerPattern} (pattern)`}</code>
          </dd>
          <dt>Subject</dt>
          <dd>
            <code>{cm.subject || `${cm.subjectPattern} (pattern)`}</code>
          </dd>
          <dt>Audience</dt>
          <dd>
            <code>{cm.audience || cm.audiencePattern || "this server"}</code>
          </dd>
        </dl>
      )}
      <FormView
        key={`${i.uid}-${i.updateTime?.seconds}-${i.updateTime?.nanos}`}
        title="Edit identity"
        submitLabel="Save"
        fields={[
          { name: "name", label: "Name", initial: i.name },
          { name: "description", label: "Description", initial: i.description },
          ...(cm
            ? claimMatchFields.map(([name, label]) => ({ name, label, initial: cm[name] }))
            : []),
        ]}
        onSubmit={async (v) => {
          const updated = await api.identities.updateIdentity({
            identity: {
              uid: i.uid,
              name: v.name as string,
              description: v.description as string,
              ...(cm
                ? { method: { case: "claimMatch", value: { ...cm, ...claimMatchOf(v) } } }
                : {}),
            },
            updateMask: { paths: ["name", "description", ...(cm ? ["claim_match"] : [])] },
          });
          props.onChange(updated);
        }}
      />
      <ConfirmButton
        label="Delete identity"
        confirm={`Delete the identity ${i.name}?`}
        action={async () => {
          await api.identities.deleteIdentity({ uid: i.uid });
          props.onChange(undefined);
        }}
      />
    </section>
  );
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
        <IdentityDetail
          key={selected.uid}
          identity={selected}
          onChange={(updated) => {
            setSelected(updated);
            setReload(reload + 1);
          }}
        />
      )}
      <FormView
        title="Create a workload identity"
        submitLabel="Create identity"
        fields={[
          { name: "name", label: "Name", required: true },
          { name: "description", label: "Description" },
          ...claimMatchFields.map(([name, label]) => ({ name, label })),
        ]}
        onSubmit={async (v) => {
          await api.identities.createIdentity({
            parent: uid,
            identity: {
              name: v.name as string,
              description: v.description as string,
              method: { case: "claimMatch", value: claimMatchOf(v) },
            },
          });
          setReload(reload + 1);
        }}
      />
    </>
  );
}

/** Every item of a list, following nextPageToken (pickers must offer everything). */
async function all<T>(
  list: (pageToken: string) => Promise<{ items: T[]; nextPageToken?: string | undefined }>,
): Promise<T[]> {
  const out: T[] = [];
  let token = "";
  do {
    const page = await list(token);
    out.push(...page.items);
    token = page.nextPageToken ?? "";
  } while (token !== "");
  return out;
}

/** Whether a role can be bound at `uid`: a built-in one, or a custom role of it or above it. */
function bindableAt(roleUid: string, uid: string): boolean {
  if (!roleUid.includes("/")) return true;
  const group = roleUid.slice(0, roleUid.lastIndexOf("/"));
  return uid === group || uid.startsWith(`${group}/`);
}

/**
 * Options for pickers: the organization's workload identities and the people who hold a role
 * in it (the ones a binding can name), and the roles that can be bound at `uid`.
 */
export function usePickers(uid: string, reload: number) {
  const [identities, setIdentities] = useState<{ value: string; label: string }[]>([]);
  const [roles, setRoles] = useState<{ value: string; label: string }[]>([]);
  useEffect(() => {
    const org = orgOf(uid);
    const uidp = { descendantsOf: org };
    Promise.all([
      all((pageToken) =>
        api.identities
          .listIdentities({ uidp, pageSize: 200, pageToken, orderBy: "name" })
          .then((r) => ({ items: r.identities, nextPageToken: r.nextPageToken })),
      ),
      all((pageToken) =>
        api.bindings
          .listRoleBindings({ uidp, pageSize: 200, pageToken })
          .then((r) => ({ items: r.roleBindings, nextPageToken: r.nextPageToken })),
      ),
    ])
      .then(([ids, bindings]) => {
        const seen = new Map<string, string>();
        for (const i of ids) seen.set(i.uid, i.name);
        for (const b of bindings) {
          if (b.identity && !seen.has(b.identity.uid))
            seen.set(b.identity.uid, `${b.identity.name} (person)`);
        }
        setIdentities([...seen].map(([value, label]) => ({ value, label })));
      })
      .catch(() => undefined);
    all((pageToken) =>
      api.roles
        .listRoles({ pageSize: 200, pageToken, orderBy: "name" })
        .then((r) => ({ items: r.roles, nextPageToken: r.nextPageToken })),
    )
      .then((rs) =>
        setRoles(
          rs.filter((r) => bindableAt(r.uid, uid)).map((r) => ({ value: r.uid, label: r.name })),
        ),
      )
      .catch(() => undefined);
  }, [uid, reload]);
  return { identities, roles };
}

/**
 * The identity of a binding: a workload identity of the organization in full, a person (whose
 * identity lives in no group, so only the binding's own copy can be shown) by name, issuer and
 * subject.
 */
function BoundIdentity({ identity, onClose }: { identity: IdentityRef; onClose: () => void }) {
  const [full, setFull] = useState<Identity | undefined>();
  const person = !identity.uid.includes("/");
  useEffect(() => {
    if (!person) {
      api.identities
        .getIdentity({ uid: identity.uid })
        .then(setFull)
        .catch(() => undefined);
    }
  }, [identity.uid]);
  return (
    <section class="detail" aria-label={`Identity ${identity.name}`}>
      <h3>{identity.name}</h3>
      <p class="uid">{identity.uid}</p>
      <dl>
        <dt>Kind</dt>
        <dd>{person ? "person" : full ? identityKind(full) : "workload"}</dd>
        {identity.description && (
          <>
            <dt>Description</dt>
            <dd>{identity.description}</dd>
          </>
        )}
        <dt>Issuer</dt>
        <dd>
          <code>{identity.issuer || "—"}</code>
        </dd>
        <dt>Subject</dt>
        <dd>
          <code>{identity.subject || "—"}</code>
        </dd>
      </dl>
      <button type="button" onClick={onClose}>
        Close
      </button>
    </section>
  );
}

function BindingsTab({ uid }: { uid: string }) {
  const [reload, setReload] = useState(0);
  const [shown, setShown] = useState<IdentityRef | undefined>();
  const { identities, roles } = usePickers(uid, reload);
  return (
    <>
      <h2>Role bindings</h2>
      <ListView<RoleBinding>
        label="Role bindings"
        nameLabel="Role name"
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
          {
            title: "Identity",
            render: (b) =>
              b.identity ? (
                <button type="button" class="link" onClick={() => setShown(b.identity)}>
                  {b.identity.name}
                </button>
              ) : (
                b.identityUid
              ),
          },
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
      {shown && (
        <BoundIdentity key={shown.uid} identity={shown} onClose={() => setShown(undefined)} />
      )}
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
