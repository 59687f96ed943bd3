import { useState } from "preact/hooks";
import type { Identity } from "../../../gen/gatehouse/iam/v2beta1/identities_pb.js";
import { api } from "../api.js";
import { ConfirmButton, FormView, ListView } from "../components.js";

/** What an identity is: a person, or a workload and the issuer it comes from. */
export function identityKind(i: Identity): string {
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

/** A group's workload identities: list, detail and edit, create. */
export function IdentitiesTab({ uid }: { uid: string }) {
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
