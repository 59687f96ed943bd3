import { useEffect, useState } from "preact/hooks";
import type { IdentityRef } from "../../gen/gatehouse/common/v2beta1/common_pb.js";
import type { Identity } from "../../gen/gatehouse/iam/v2beta1/identities_pb.js";
import { api } from "./api.js";

// How an identity is shown wherever one appears (the Identities, Bindings and Members tabs):
// here, so that no tab imports another.

/** What an identity is: a person, or a workload and the issuer it comes from. */
export function identityKind(i: Identity): string {
  const m = i.method;
  if (m.case === "claimMatch") return `workload: ${m.value.issuer || m.value.issuerPattern}`;
  if (m.case === "staticKeys") return `workload (static keys): ${m.value.issuer}`;
  return `person${i.email ? ` <${i.email}>` : ""}`;
}

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
