import { useState } from "preact/hooks";
import { api } from "../api.js";
import type { Can } from "../caps.js";
import { ConfirmButton, FormView, ListView } from "../components.js";
import { usePickers } from "../pickers.js";

/** An organization's identity providers. */
export function ProvidersTab({ uid, can }: { uid: string; can: Can }) {
  const [reload, setReload] = useState(0);
  const { roles } = usePickers(uid, 0);
  return (
    <>
      <h2>Identity providers</h2>
      <p>
        People sign in through an organization's provider with{" "}
        <code>gatehouse auth login --identity-provider &lt;uid&gt;</code> and get its default role
        here.
      </p>
      <ListView
        label="Identity providers"
        reload={reload}
        load={async (q) => {
          const r = await api.providers.listIdentityProviders({ uidp: { childrenOf: uid }, ...q });
          return {
            items: r.identityProviders,
            nextPageToken: r.nextPageToken,
            totalCount: r.totalCount,
          };
        }}
        columns={[
          { title: "Name", render: (p) => <span title={p.uid}>{p.name}</span> },
          { title: "Issuer", render: (p) => p.oidc?.issuer ?? "" },
          { title: "Client ID", render: (p) => p.oidc?.clientId ?? "" },
          { title: "Email domains", render: (p) => p.emailDomains.join(", ") },
          {
            title: "Redirect URI (register it at the provider)",
            render: (p) => <span class="uid">{p.redirectUri}</span>,
          },
          { title: "Uid", render: (p) => <span class="uid">{p.uid}</span> },
          {
            title: "Delete",
            render: (p) =>
              can("identity_providers.delete") ? (
                <ConfirmButton
                  label="Delete"
                  confirm={`Delete the provider ${p.name}?`}
                  action={async () => {
                    await api.providers.deleteIdentityProvider({ uid: p.uid });
                    setReload(reload + 1);
                  }}
                />
              ) : null,
          },
        ]}
      />
      {can("identity_providers.create") && (
        <FormView
          title="Add an identity provider"
          submitLabel="Add provider"
          fields={[
            { name: "name", label: "Name", required: true },
            { name: "issuer", label: "Issuer (https URL)", required: true },
            { name: "clientId", label: "Client ID", required: true },
            { name: "clientSecret", label: "Client secret (never shown again)", type: "password" },
            {
              // A claim, not proof of ownership: it only picks this provider at sign-in.
              name: "emailDomains",
              label: "Email domains that sign in here (comma separated, optional)",
            },
            {
              name: "defaultRole",
              label: "Default role",
              type: "select",
              options: roles,
              search: true,
            },
          ]}
          onSubmit={async (v) => {
            await api.providers.createIdentityProvider({
              parent: uid,
              identityProvider: {
                name: v.name as string,
                defaultRole: v.defaultRole as string,
                emailDomains: (v.emailDomains as string).split(/[\s,]+/).filter((d) => d !== ""),
                oidc: {
                  issuer: v.issuer as string,
                  clientId: v.clientId as string,
                  clientSecret: v.clientSecret as string,
                },
              },
            });
            setReload(reload + 1);
          }}
        />
      )}
    </>
  );
}
