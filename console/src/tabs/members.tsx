import { useEffect, useState } from "preact/hooks";
import type { IdentityRef } from "../../../gen/gatehouse/common/v2beta1/common_pb.js";
import type { RoleBinding } from "../../../gen/gatehouse/iam/v2beta1/role_bindings_pb.js";
import { api, type Problem, problemOf } from "../api.js";
import type { Can } from "../caps.js";
import { ConfirmButton, FormView, ProblemBox } from "../components.js";
import { BoundIdentity } from "../identity-detail.js";
import { all, ancestors, usePickers } from "../pickers.js";
import { groupHref } from "../routes.js";

/** How a binding reaches the group a page shows. */
type Reach = "inherited" | "direct" | "below";

/** A person or workload holding roles at, above or below a group, with those roles. */
interface Member {
  identity: IdentityRef;
  grants: { binding: RoleBinding; reach: Reach }[];
}

/**
 * Every binding that matters at `uid`: those of the groups above it (inherited here), its own,
 * and those of the groups below it. Groups above that the caller may not list are left out.
 */
async function bindingsAround(uid: string): Promise<Member[]> {
  const above = ancestors(uid).slice(0, -1);
  const pages = await Promise.all([
    ...above.map((group) =>
      all((pageToken) =>
        api.bindings
          .listRoleBindings({ group, pageSize: 200, pageToken })
          .then((r) => ({ items: r.roleBindings, nextPageToken: r.nextPageToken })),
      ).catch(() => [] as RoleBinding[]),
    ),
    all((pageToken) =>
      api.bindings
        .listRoleBindings({ uidp: { descendantsOf: uid }, pageSize: 200, pageToken })
        .then((r) => ({ items: r.roleBindings, nextPageToken: r.nextPageToken })),
    ),
  ]);
  const members = new Map<string, Member>();
  for (const b of pages.flat()) {
    if (!b.identity || !b.group) continue;
    const reach: Reach =
      b.group.uid === uid ? "direct" : above.includes(b.group.uid) ? "inherited" : "below";
    const m = members.get(b.identity.uid) ?? { identity: b.identity, grants: [] };
    m.grants.push({ binding: b, reach });
    members.set(b.identity.uid, m);
  }
  const order: Record<Reach, number> = { inherited: 0, direct: 1, below: 2 };
  for (const m of members.values()) m.grants.sort((x, y) => order[x.reach] - order[y.reach]);
  return [...members.values()].sort((a, b) => a.identity.name.localeCompare(b.identity.name));
}

/** Where a role is held, as a person reads it. */
function where(g: { binding: RoleBinding; reach: Reach }) {
  const group = g.binding.group;
  const link = group ? <a href={groupHref(group.uid, "members")}>{group.name}</a> : null;
  if (g.reach === "direct") return <>here</>;
  if (g.reach === "inherited") return <>inherited from {link}</>;
  return <>in {link}, below</>;
}

/**
 * The members of a group: people and workloads holding roles here, above (inherited) or
 * below, each with their roles and where they hold them; grant and revoke from here.
 */
export function MembersTab({ uid, can }: { uid: string; can: Can }) {
  const [members, setMembers] = useState<Member[] | undefined>();
  const [problem, setProblem] = useState<Problem | undefined>();
  const [reload, setReload] = useState(0);
  const [shown, setShown] = useState<IdentityRef | undefined>();
  const { identities, roles } = usePickers(uid, reload);
  useEffect(() => {
    bindingsAround(uid)
      .then((m) => {
        setMembers(m);
        setProblem(undefined);
      })
      .catch((err) => setProblem(problemOf(err)));
  }, [uid, reload]);
  return (
    <>
      <h2>Members</h2>
      <p>People and workloads holding a role here, above this group (inherited) or below it.</p>
      <ProblemBox problem={problem} />
      {members && (
        <table aria-label="Members">
          <thead>
            <tr>
              <th scope="col">Member</th>
              <th scope="col">Kind</th>
              <th scope="col">Roles</th>
            </tr>
          </thead>
          <tbody>
            {members.map((m) => (
              <tr key={m.identity.uid}>
                <td>
                  <button
                    type="button"
                    class="link"
                    title={m.identity.uid}
                    onClick={() => setShown(m.identity)}
                  >
                    {m.identity.name}
                  </button>
                </td>
                <td>{m.identity.uid.includes("/") ? "workload" : "person"}</td>
                <td>
                  <ul class="roles">
                    {m.grants.map((g) => (
                      <li key={g.binding.uid} title={`binding ${g.binding.uid}`}>
                        <strong>{g.binding.role?.name}</strong> {where(g)}{" "}
                        {g.reach !== "inherited" && can("role_bindings.delete") && (
                          <ConfirmButton
                            label={`Revoke ${g.binding.role?.name}`}
                            confirm={`Revoke ${g.binding.role?.name} from ${m.identity.name} in ${g.binding.group?.name}?`}
                            action={async () => {
                              await api.bindings.deleteRoleBinding({ uid: g.binding.uid });
                              setReload((r) => r + 1);
                            }}
                          />
                        )}
                      </li>
                    ))}
                  </ul>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {members?.length === 0 && <p>No one holds a role here yet.</p>}
      {shown && (
        <BoundIdentity key={shown.uid} identity={shown} onClose={() => setShown(undefined)} />
      )}
      {can("role_bindings.create") && (
        <FormView
          title="Grant a role here"
          submitLabel="Grant"
          fields={[
            {
              name: "identityUid",
              label: "Member",
              type: "select",
              options: identities,
              search: true,
            },
            { name: "roleUid", label: "Role", type: "select", options: roles, search: true },
          ]}
          onSubmit={async (v) => {
            await api.bindings.createRoleBinding({
              parent: uid,
              roleBinding: { identityUid: v.identityUid as string, roleUid: v.roleUid as string },
            });
            setReload((r) => r + 1);
          }}
        />
      )}
    </>
  );
}
