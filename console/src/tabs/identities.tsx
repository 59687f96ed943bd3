import { Fragment } from "preact";
import { useState } from "preact/hooks";
import type { Identity } from "../../../gen/gatehouse/iam/v2beta1/identities_pb.js";
import { api } from "../api.js";
import type { Can } from "../caps.js";
import { ConfirmButton, FormView, ListView } from "../components.js";
import { identityKind } from "../identity-detail.js";

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

const claimsLabel = "Other claims that must equal a value (one name=value a line)";
const claimPatternsLabel = "Other claims that must match a pattern (one name=RE2 a line)";

/** A claims map as the form's text: one `name=value` a line. */
function linesOf(map: Record<string, string>): string {
  return Object.entries(map)
    .map(([k, v]) => `${k}=${v}`)
    .join("\n");
}

/** The form's text as a claims map; a line without `=` is refused, naming it. */
function mapOf(text: string, label: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of text.split("\n")) {
    if (line.trim() === "") continue;
    const eq = line.indexOf("=");
    if (eq <= 0) throw new Error(`${label}: "${line}" is not name=value`);
    out[line.slice(0, eq).trim()] = line.slice(eq + 1).trim();
  }
  return out;
}

/** The claimMatch of a create or edit form: the fixed fields, and the other claims. */
function claimMatchOf(v: Record<string, string | string[]>) {
  return {
    ...(Object.fromEntries(
      claimMatchFields.map(([k]) => [k, ((v[k] as string | undefined) ?? "").trim()]),
    ) as Record<ClaimMatchKey, string>),
    claims: mapOf((v.claims as string | undefined) ?? "", "Claims"),
    claimPatterns: mapOf((v.claimPatterns as string | undefined) ?? "", "Claim patterns"),
  };
}

/** One identity: what it matches, and (for a workload) the edit form and delete. */
function IdentityDetail(props: {
  identity: Identity;
  can: Can;
  onChange: (updated: Identity | undefined) => void;
}) {
  const i = props.identity;
  const cm = i.method.case === "claimMatch" ? i.method.value : undefined;
  return (
    <section class="detail" aria-label={`Identity ${i.name}`}>
      <h3 title={i.uid}>{i.name}</h3>
      <p>{identityKind(i)}</p>
      <details class="ids">
        <summary>Details</summary>
        <dl>
          <dt>Uid</dt>
          <dd class="uid">{i.uid}</dd>
        </dl>
      </details>
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
          {Object.entries(cm.claims).map(([k, v]) => (
            <Fragment key={`c-${k}`}>
              <dt>
                Claim <code>{k}</code>
              </dt>
              <dd>
                equals <code>{v}</code>
              </dd>
            </Fragment>
          ))}
          {Object.entries(cm.claimPatterns).map(([k, v]) => (
            <Fragment key={`p-${k}`}>
              <dt>
                Claim <code>{k}</code>
              </dt>
              <dd>
                matches <code>{v}</code> (pattern)
              </dd>
            </Fragment>
          ))}
        </dl>
      )}
      {props.can("identities.update") && (
        <FormView
          key={`${i.uid}-${i.updateTime?.seconds}-${i.updateTime?.nanos}`}
          title="Edit identity"
          submitLabel="Save"
          fields={[
            { name: "name", label: "Name", initial: i.name },
            { name: "description", label: "Description", initial: i.description },
            ...(cm
              ? [
                  ...claimMatchFields.map(([name, label]) => ({ name, label, initial: cm[name] })),
                  {
                    name: "claims",
                    label: claimsLabel,
                    type: "textarea" as const,
                    initial: linesOf(cm.claims),
                  },
                  {
                    name: "claimPatterns",
                    label: claimPatternsLabel,
                    type: "textarea" as const,
                    initial: linesOf(cm.claimPatterns),
                  },
                ]
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
      )}
      {props.can("identities.delete") && (
        <ConfirmButton
          label="Delete identity"
          confirm={`Delete the identity ${i.name}?`}
          action={async () => {
            await api.identities.deleteIdentity({ uid: i.uid });
            props.onChange(undefined);
          }}
        />
      )}
    </section>
  );
}

/** A group's workload identities: list, detail and edit, create. */
export function IdentitiesTab({ uid, can }: { uid: string; can: Can }) {
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
              <button type="button" class="link" title={i.uid} onClick={() => setSelected(i)}>
                {i.name}
              </button>
            ),
          },
          { title: "Kind", render: identityKind },
        ]}
      />
      {selected && (
        <IdentityDetail
          can={can}
          key={selected.uid}
          identity={selected}
          onChange={(updated) => {
            setSelected(updated);
            setReload(reload + 1);
          }}
        />
      )}
      {can("identities.create") && (
        <FormView
          title="Create a workload identity"
          submitLabel="Create identity"
          fields={[
            { name: "name", label: "Name", required: true },
            { name: "description", label: "Description" },
            ...claimMatchFields.map(([name, label]) => ({ name, label })),
            { name: "claims", label: claimsLabel, type: "textarea" },
            { name: "claimPatterns", label: claimPatternsLabel, type: "textarea" },
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
      )}
    </>
  );
}
