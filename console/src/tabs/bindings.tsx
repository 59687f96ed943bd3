import { timestampDate, timestampFromMs } from "@bufbuild/protobuf/wkt";
import { useState } from "preact/hooks";
import type { IdentityRef } from "../../../gen/gatehouse/common/v2beta1/common_pb.js";
import type { RoleBinding } from "../../../gen/gatehouse/iam/v2beta1/role_bindings_pb.js";
import { api } from "../api.js";
import type { Can } from "../caps.js";
import { ConfirmButton, FormView, ListView } from "../components.js";
import { BoundIdentity } from "../identity-detail.js";
import { usePickers } from "../pickers.js";

/** How long a grant lasts, in hours ("0": until revoked): what people ask for. */
const lastingOptions = [
  { value: "0", label: "until revoked" },
  { value: "1", label: "for 1 h" },
  { value: "8", label: "for 8 h" },
  { value: "24", label: "for 1 d" },
  { value: "168", label: "for 7 d" },
];

/** The role bindings at a group: revoke, grant (for a while, or until revoked). */
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
              ) : b.team ? (
                // A binding to a team: its members hold the role (the Teams tab lists them).
                <span title={b.team.uid}>team {b.team.name}</span>
              ) : (
                b.identityUid
              ),
          },
          { title: "Role", render: (b) => b.role?.name ?? "" },
          { title: "Group", render: (b) => b.group?.name ?? "" },
          {
            title: "Expires",
            render: (b) =>
              b.expireTime ? (
                <time dateTime={timestampDate(b.expireTime).toISOString()}>
                  {timestampDate(b.expireTime).toLocaleString()}
                </time>
              ) : (
                "until revoked"
              ),
          },
          {
            title: "Revoke",
            render: (b) =>
              can("role_bindings.delete") ? (
                <ConfirmButton
                  label="Revoke"
                  confirm={`Revoke ${b.role?.name} from ${b.identity?.name ?? `team ${b.team?.name}`}?`}
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
            // Named as the API's field, so that a refusal of the expiry shows next to it.
            {
              name: "expireTime",
              label: "Lasts",
              type: "select",
              options: lastingOptions,
              initial: "0",
            },
          ]}
          onSubmit={async (v) => {
            const hours = Number(v.expireTime || 0);
            await api.bindings.createRoleBinding({
              parent: uid,
              roleBinding: {
                identityUid: v.identityUid as string,
                roleUid: v.roleUid as string,
                ...(hours > 0
                  ? { expireTime: timestampFromMs(Date.now() + hours * 3_600_000) }
                  : {}),
              },
            });
            setReload(reload + 1);
          }}
        />
      )}
    </>
  );
}
