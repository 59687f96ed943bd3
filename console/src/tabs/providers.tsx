import { useState } from "preact/hooks";
import type { IdentityProvider } from "../../../gen/gatehouse/iam/v2beta1/identity_providers_pb.js";
import { api } from "../api.js";
import type { Can } from "../caps.js";
import { ConfirmButton, CopyText, FormView, ListView } from "../components.js";
import { type Option, usePickers } from "../pickers.js";

/** A provider from the create or edit form's values (email domains comma or space separated). */
function providerOf(v: Record<string, string | string[]>) {
  return {
    name: v.name as string,
    defaultRole: v.defaultRole as string,
    emailDomains: (v.emailDomains as string).split(/[\s,]+/).filter((d) => d !== ""),
    oidc: {
      issuer: v.issuer as string,
      clientId: v.clientId as string,
      clientSecret: v.clientSecret as string,
    },
  };
}

/** One provider: its redirect URI to copy, and the edit form. */
function ProviderDetail(props: {
  provider: IdentityProvider;
  roles: Option[];
  can: Can;
  onChange: (updated: IdentityProvider) => void;
}) {
  const p = props.provider;
  return (
    <section class="detail" aria-label={`Identity provider ${p.name}`}>
      <h3 title={p.uid}>{p.name}</h3>
      <p>
        Register this redirect URI at the provider: <CopyText text={p.redirectUri} />
      </p>
      {props.can("identity_providers.update") && (
        <FormView
          key={`${p.uid}-${p.updateTime?.seconds}-${p.updateTime?.nanos}`}
          title="Edit identity provider"
          submitLabel="Save"
          fields={[
            { name: "name", label: "Name", initial: p.name, required: true },
            { name: "issuer", label: "Issuer (https URL)", initial: p.oidc?.issuer ?? "" },
            { name: "clientId", label: "Client ID", initial: p.oidc?.clientId ?? "" },
            {
              name: "clientSecret",
              label: "New client secret (empty keeps the current one)",
              type: "password",
            },
            {
              name: "emailDomains",
              label: "Email domains that sign in here (comma separated, optional)",
              initial: p.emailDomains.join(", "),
            },
            {
              name: "defaultRole",
              label: "Default role",
              type: "select",
              options: props.roles,
              search: true,
              initial: p.defaultRole,
            },
          ]}
          onSubmit={async (v) => {
            const secret = v.clientSecret as string;
            const updated = await api.providers.updateIdentityProvider({
              identityProvider: { uid: p.uid, ...providerOf(v) },
              updateMask: {
                paths: [
                  "name",
                  "default_role",
                  "email_domains",
                  "oidc.issuer",
                  "oidc.client_id",
                  ...(secret === "" ? [] : ["oidc.client_secret"]),
                ],
              },
            });
            props.onChange(updated);
          }}
        />
      )}
    </section>
  );
}

/** An organization's identity providers. */
export function ProvidersTab({ uid, can }: { uid: string; can: Can }) {
  const [reload, setReload] = useState(0);
  const [selected, setSelected] = useState<IdentityProvider | undefined>();
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
          {
            title: "Name",
            render: (p) => (
              <button type="button" class="link" title={p.uid} onClick={() => setSelected(p)}>
                {p.name}
              </button>
            ),
          },
          { title: "Issuer", render: (p) => p.oidc?.issuer ?? "" },
          { title: "Client ID", render: (p) => p.oidc?.clientId ?? "" },
          { title: "Email domains", render: (p) => p.emailDomains.join(", ") },
          {
            title: "Redirect URI (register it at the provider)",
            render: (p) => <CopyText text={p.redirectUri} />,
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
      {selected && (
        <ProviderDetail
          key={selected.uid}
          provider={selected}
          roles={roles}
          can={can}
          onChange={(updated) => {
            setSelected(updated);
            setReload(reload + 1);
          }}
        />
      )}
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
              identityProvider: providerOf(v),
            });
            setReload(reload + 1);
          }}
        />
      )}
    </>
  );
}
