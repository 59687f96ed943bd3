import { useEffect, useState } from "preact/hooks";
import {
  type AccessRequest,
  AccessRequest_State,
} from "../../../gen/gatehouse/iam/v2beta1/access_requests_pb.js";
import { api, type Problem, problemOf } from "../api.js";
import type { Can } from "../caps.js";
import { FormView, ListView, ProblemBox, time } from "../components.js";
import { all, bindableAt, type Option } from "../pickers.js";

/** How long an approved request grants its role, in hours: what people ask for. */
const durationOptions = [
  { value: "1", label: "1 h" },
  { value: "8", label: "8 h" },
  { value: "24", label: "1 d" },
  { value: "168", label: "7 d" },
];

/**
 * Access requests at a group: whoever may grant role bindings there (role_bindings.create)
 * sees the pending ones and approves or denies each with a reason; anyone who sees the group
 * asks for a role there for a while.
 */
export function AccessRequestsTab({ uid, can }: { uid: string; can: Can }) {
  const [reload, setReload] = useState(0);
  const [sent, setSent] = useState<AccessRequest | undefined>();
  const roles = useRequestableRoles(uid);
  return (
    <>
      <h2>Access requests</h2>
      {can("role_bindings.create") && (
        <ListView<AccessRequest>
          label="Pending access requests"
          nameLabel="Role name"
          reload={reload}
          load={async (q) => {
            const r = await api.accessRequests.listAccessRequests({
              uidp: { childrenOf: uid },
              state: AccessRequest_State.PENDING,
              ...q,
            });
            return {
              items: r.accessRequests,
              nextPageToken: r.nextPageToken,
              totalCount: r.totalCount,
            };
          }}
          columns={[
            {
              title: "Requester",
              render: (r) => <span title={r.requester?.uid}>{r.requester?.name}</span>,
            },
            { title: "Role", render: (r) => r.role?.name ?? r.roleUid },
            { title: "For", render: (r) => lasting(r) },
            { title: "Reason", render: (r) => r.reason },
            { title: "Asked", render: (r) => time(r.createTime) },
            { title: "Lapses", render: (r) => time(r.expirationTime) },
            {
              title: "Answer",
              render: (r) => <Answer request={r} onAnswered={() => setReload(reload + 1)} />,
            },
          ]}
        />
      )}
      <FormView
        title="Request access"
        submitLabel="Request access"
        fields={[
          { name: "roleUid", label: "Role", type: "select", options: roles },
          // Named as the API's field, so that a refusal of it shows next to it.
          {
            name: "duration",
            label: "Duration",
            type: "select",
            options: durationOptions,
            initial: "1",
          },
          { name: "reason", label: "Reason", type: "textarea", required: true },
        ]}
        onSubmit={async (v) => {
          const hours = Number(v.duration || 0);
          const made = await api.accessRequests.createAccessRequest({
            parent: uid,
            accessRequest: {
              roleUid: v.roleUid as string,
              duration: { seconds: BigInt(hours * 3600) },
              reason: v.reason as string,
            },
          });
          setSent(made);
          setReload(reload + 1);
        }}
      />
      {sent && (
        <p role="status">
          Requested {sent.role?.name} at {sent.group?.name} for {lasting(sent)}: waiting for an
          answer until {time(sent.expirationTime)}.
        </p>
      )}
    </>
  );
}

/** A request's duration as offered ("8 h"), or in hours when it is another one. */
function lasting(r: AccessRequest): string {
  const hours = Number(r.duration?.seconds ?? 0n) / 3600;
  return durationOptions.find((o) => Number(o.value) === hours)?.label ?? `${hours} h`;
}

/** A reason and the Approve and Deny buttons of one pending request; its refusal beside it. */
function Answer(props: { request: AccessRequest; onAnswered: () => void }) {
  const { request, onAnswered } = props;
  const [reason, setReason] = useState("");
  const [problem, setProblem] = useState<Problem | undefined>();
  const [busy, setBusy] = useState(false);
  const who = request.requester?.name ?? request.requester?.uid ?? "";
  const answer = async (approve: boolean) => {
    setBusy(true);
    try {
      const req = { uid: request.uid, reason };
      if (approve) await api.accessRequests.approveAccessRequest(req);
      else await api.accessRequests.denyAccessRequest(req);
      setProblem(undefined);
      onAnswered();
    } catch (err) {
      setProblem(problemOf(err));
    } finally {
      setBusy(false);
    }
  };
  return (
    <div>
      <input
        type="text"
        aria-label={`Reason for answering ${who}`}
        placeholder="reason"
        value={reason}
        onInput={(e) => setReason(e.currentTarget.value)}
      />
      <button type="button" disabled={busy} onClick={() => answer(true)}>
        Approve
      </button>
      <button type="button" class="danger" disabled={busy} onClick={() => answer(false)}>
        Deny
      </button>
      <ProblemBox problem={problem} />
    </div>
  );
}

/** The roles one may ask for at `uid`: built in, or defined at or above it. */
function useRequestableRoles(uid: string): Option[] {
  const [roles, setRoles] = useState<Option[]>([]);
  useEffect(() => {
    all((pageToken) =>
      api.roles
        .listRoles({ pageSize: 200, pageToken, orderBy: "name" })
        .then((r) => ({ items: r.roles, nextPageToken: r.nextPageToken })),
    )
      .then((rs) =>
        setRoles(
          rs.filter((r) => bindableAt(r.uid, uid)).map((r) => ({ value: r.uid, label: r.name })),
        ),
      )
      .catch(() => setRoles([]));
  }, [uid]);
  return roles;
}
