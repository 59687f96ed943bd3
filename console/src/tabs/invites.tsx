import { useState } from "preact/hooks";
import { GroupInvite_State } from "../../../gen/gatehouse/iam/v2beta1/group_invites_pb.js";
import { api } from "../api.js";
import type { Can } from "../caps.js";
import { ConfirmButton, FormView, ListView, time } from "../components.js";
import { usePickers } from "../pickers.js";

/** A group's invites: the code shown once on creation. */
export function InvitesTab({ uid, can }: { uid: string; can: Can }) {
  const [reload, setReload] = useState(0);
  const [code, setCode] = useState<string | undefined>();
  const [link, setLink] = useState<string | undefined>();
  const { roles } = usePickers(uid, 0);
  return (
    <>
      <h2>Invites</h2>
      {code && (
        <section class="once" aria-label="New invite code">
          <p>
            The invite's code, shown this once (Gatehouse keeps only its hash):{" "}
            <code id="invite-code">{code}</code>{" "}
            <button type="button" onClick={() => navigator.clipboard?.writeText(code)}>
              Copy code
            </button>
          </p>
          {link && (
            <p>
              Or send this link: it signs the person in to this console and redeems the code in one
              step. <code id="invite-link">{link}</code>{" "}
              <button type="button" onClick={() => navigator.clipboard?.writeText(link)}>
                Copy link
              </button>
            </p>
          )}
          <p>
            Redeem it with <code>gatehouse iam invites redeem {code}</code>, or in this console's
            home page.
          </p>
          <button type="button" onClick={() => setCode(undefined)}>
            Done
          </button>
        </section>
      )}
      <ListView
        label="Invites"
        nameLabel="Role name"
        reload={reload}
        load={async (q) => {
          const r = await api.invites.listGroupInvites({ uidp: { childrenOf: uid }, ...q });
          return {
            items: r.groupInvites,
            nextPageToken: r.nextPageToken,
            totalCount: r.totalCount,
          };
        }}
        columns={[
          { title: "Role", render: (i) => i.role?.name ?? i.roleUid },
          { title: "Email", render: (i) => i.email || "anyone with the code" },
          { title: "Expires", render: (i) => time(i.expirationTime) },
          { title: "Single use", render: (i) => (i.singleUse ? "yes" : "no") },
          { title: "State", render: (i) => GroupInvite_State[i.state] ?? "" },
          {
            title: "Delete",
            render: (i) =>
              can("group_invites.delete") ? (
                <ConfirmButton
                  label="Delete"
                  confirm="Delete this invite?"
                  action={async () => {
                    await api.invites.deleteGroupInvite({ uid: i.uid });
                    setReload(reload + 1);
                  }}
                />
              ) : null,
          },
        ]}
      />
      {can("group_invites.create") && (
        <FormView
          title="Create an invite"
          submitLabel="Create invite"
          fields={[
            { name: "roleUid", label: "Role", type: "select", options: roles, search: true },
            { name: "email", label: "Only for this verified email (optional)" },
            { name: "ttl", label: "Valid for (seconds, default 7 days)" },
            { name: "singleUse", label: "Single use", type: "checkbox" },
          ]}
          onSubmit={async (v) => {
            const seconds = (v.ttl as string).trim();
            const invite = await api.invites.createGroupInvite({
              parent: uid,
              groupInvite: {
                roleUid: v.roleUid as string,
                email: v.email as string,
                singleUse: v.singleUse === "true",
                ...(seconds === "" ? {} : { ttl: { seconds: BigInt(Number(seconds) || 0) } }),
              },
            });
            setCode(invite.code);
            setLink(invite.link);
            setReload(reload + 1);
          }}
        />
      )}
    </>
  );
}
