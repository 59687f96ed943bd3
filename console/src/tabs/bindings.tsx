import { useState } from "preact/hooks";
import type { IdentityRef } from "../../../gen/gatehouse/common/v2beta1/common_pb.js";
import type { RoleBinding } from "../../../gen/gatehouse/iam/v2beta1/role_bindings_pb.js";
import { api } from "../api.js";
import type { Can } from "../caps.js";
import { ConfirmButton, FormView, ListView } from "../components.js";
import { BoundIdentity } from "../identity-detail.js";
import { usePickers } from "../pickers.js";

/** The role bindings at a group: revoke, grant. */
export function BindingsTab({ uid, can }: { uid: string; can: Can }) {
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
            render: (b) =>
              can("role_bindings.delete") ? (
                <ConfirmButton
                  label="Revoke"
                  confirm={`Revoke ${b.role?.name} from ${b.identity?.name}?`}
                  action={async () => {
                    await api.bindings.deleteRoleBinding({ uid: b.uid });
                    setReload(reload + 1);
                  }}
                />
              ) : null,
          },
        ]}
      />
      {shown && (
        <BoundIdentity key={shown.uid} identity={shown} onClose={() => setShown(undefined)} />
      )}
      {can("role_bindings.create") && (
        <FormView
          title="Grant a role"
          submitLabel="Grant"
          fields={[
            {
              name: "identityUid",
              label: "Identity",
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
            setReload(reload + 1);
          }}
        />
      )}
    </>
  );
}
