import { useEffect, useState } from "preact/hooks";
import type { IdentityRef } from "../../../gen/gatehouse/common/v2beta1/common_pb.js";
import type { Identity } from "../../../gen/gatehouse/iam/v2beta1/identities_pb.js";
import type { RoleBinding } from "../../../gen/gatehouse/iam/v2beta1/role_bindings_pb.js";
import { api } from "../api.js";
import type { Can } from "../caps.js";
import { ConfirmButton, FormView, ListView } from "../components.js";
import { usePickers } from "../pickers.js";
import { identityKind } from "./identities.js";

/**
 * The identity of a binding: a workload identity of the organization in full, a person (whose
 * identity lives in no group, so only the binding's own copy can be shown) by name, issuer and
 * subject.
 */
export function BoundIdentity({
  identity,
  onClose,
}: {
  identity: IdentityRef;
  onClose: () => void;
}) {
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
