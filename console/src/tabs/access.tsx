import { useEffect, useState } from "preact/hooks";
import {
  AccessShortfall_Lack,
  type CheckAccessResponse,
} from "../../../gen/gatehouse/iam/v2beta1/access_pb.js";
import type { RoleBinding } from "../../../gen/gatehouse/iam/v2beta1/role_bindings_pb.js";
import {
  type Capability,
  canonicalCapability,
  capabilities,
  capabilityDescription,
} from "../../../src/auth/capability-catalog.js";
import { api } from "../api.js";
import { FormView } from "../components.js";
import { type Option, usePickers } from "../pickers.js";
import { groupHref } from "../routes.js";

/** A question asked and its answer. */
interface Asked {
  identity: string;
  capability: string;
  answer: CheckAccessResponse;
  /** When denied: the names of the roles that would grant the capability here. */
  granting: string[];
}

function GroupLink({ binding }: { binding: RoleBinding | undefined }) {
  const g = binding?.group;
  return g ? (
    <a href={groupHref(g.uid, "members")} title={g.uid}>
      {g.name}
    </a>
  ) : null;
}

/** A CheckAccess answer as sentences: the decision, then the role bindings behind it. */
function Explanation({ asked, groupName }: { asked: Asked; groupName: string }) {
  const { answer, identity, capability, granting } = asked;
  const cap = <code>{capability}</code>;
  const wouldGrant =
    !answer.allowed && granting.length > 0 ? (
      <p>
        Roles that would grant {cap}: {granting.join(", ")}.
      </p>
    ) : null;
  return (
    <section class="detail" aria-label="Access explained">
      <h3>
        {identity} {answer.allowed ? "may" : "may not"} use {cap} in {groupName}
      </h3>
      {answer.allowed ? (
        <>
          <p>Because of these role bindings, nearest first:</p>
          <ul>
            {answer.grants.map((g) => (
              <li key={g.roleBinding?.uid} title={`binding ${g.roleBinding?.uid}`}>
                role <strong>{g.roleBinding?.role?.name}</strong>{" "}
                {g.inherited ? (
                  <>
                    bound at <GroupLink binding={g.roleBinding} />, above: inherited here
                  </>
                ) : (
                  <>bound at this group itself</>
                )}
              </li>
            ))}
          </ul>
        </>
      ) : answer.shortfalls.length === 0 ? (
        <>
          <p>{identity} holds no role in this organization.</p>
          {wouldGrant}
        </>
      ) : (
        <>
          <p>Its nearest role bindings, and what each lacks:</p>
          <ul>
            {answer.shortfalls.map((s) => (
              <li key={s.roleBinding?.uid} title={`binding ${s.roleBinding?.uid}`}>
                role <strong>{s.roleBinding?.role?.name}</strong> at{" "}
                <GroupLink binding={s.roleBinding} />:{" "}
                {s.lack === AccessShortfall_Lack.CAPABILITY ? (
                  <>applies here, but the role does not include {cap}</>
                ) : (
                  <>includes {cap}, but that group does not contain this one</>
                )}
              </li>
            ))}
          </ul>
          {wouldGrant}
        </>
      )}
    </section>
  );
}

/** A capability as a line: its name and what it lets its holder do. */
function describe(c: string): string {
  const known: Capability | undefined = canonicalCapability(c);
  return known ? capabilityDescription(known) : "";
}

/**
 * Effective access at a group: what the caller may do here, and, for any member and any
 * capability, whether they may and which role bindings say so (CheckAccess).
 */
export function AccessTab({ uid, groupName }: { uid: string; groupName: string }) {
  const { identities } = usePickers(uid, 0);
  const [me, setMe] = useState<Option | undefined>();
  const [mine, setMine] = useState<string[] | undefined>();
  const [asked, setAsked] = useState<Asked | undefined>();
  useEffect(() => {
    api.caller
      .getCaller({})
      .then(
        (c) => c.identity && setMe({ value: c.identity.uid, label: `${c.identity.name} (you)` }),
      )
      .catch(() => undefined);
    api.access
      .listCallerCapabilities({ groupUid: uid })
      .then((r) => setMine(r.capabilities))
      .catch(() => setMine([]));
  }, [uid]);
  const people = me ? [me, ...identities.filter((i) => i.value !== me.value)] : identities;
  return (
    <>
      <h2>Effective access</h2>
      <FormView
        title="Why may someone do something here"
        submitLabel="Explain"
        fields={[
          { name: "identityUid", label: "Member", type: "select", options: people, search: true },
          {
            name: "capability",
            label: "Capability",
            type: "select",
            options: capabilities.map((c) => ({ value: c, label: `${c}: ${describe(c)}` })),
            search: true,
          },
        ]}
        onSubmit={async (v) => {
          const identityUid = v.identityUid as string;
          const capability = v.capability as string;
          const answer = await api.access.checkAccess({ identityUid, capability, groupUid: uid });
          const name = people.find((p) => p.value === identityUid)?.label ?? identityUid;
          // The roles that would grant it, as the answer names them (built-in and the
          // organization's own that the caller may list).
          const granting = answer.grantingRoles.map((r) => r.name);
          setAsked({ identity: name, capability, answer, granting });
        }}
      />
      <div aria-live="polite">{asked && <Explanation asked={asked} groupName={groupName} />}</div>
      <h3>What you may do here</h3>
      {mine &&
        (mine.length === 0 ? (
          <p>Nothing.</p>
        ) : (
          <dl class="caps">
            {mine.map((c) => (
              <div key={c}>
                <dt>
                  <code>{c}</code>
                </dt>
                <dd>{describe(c)}</dd>
              </div>
            ))}
          </dl>
        ))}
    </>
  );
}
