import { isUid } from "../uid.js";
import { type BindingSummary, bindingSummaryOf } from "./binding-summary.js";
import {
  changesBetween,
  type FieldChange,
  type ResourceSummary,
  recordOf,
  resourceOf,
  snapshotOf,
} from "./change-data.js";
import { newEventId } from "./event-id.js";

/**
 * AuditScope is what one call that changes something tells the store about itself, so that
 * the store can write the call's event in the transaction of its change (an outbox): the
 * event type derived from the RPC, the actor, the request id and the protocol. The caller
 * hands it to the store with `store.recording(scope)` (a store view for the call); each
 * backend's one generic write path reads it from the view (src/store/sqlite/sqlite-store.ts
 * and src/store/postgres/pg-store.ts).
 */
export interface AuditScope {
  /** CloudEvents type, e.g. `dev.gatehouse.iam.group.created.v1`. */
  readonly type: string;
  /** CloudEvents source: the API service, e.g. `/gatehouse.iam.v2beta1.GroupsService`. */
  readonly source: string;
  /** The caller's identity uid, "" when the call is not authenticated (a login). */
  readonly actorUid: string;
  readonly requestId: string;
  readonly protocol: string;
  /** The uid the request names (update, delete), the subject when the write returns none. */
  readonly requestUid: string;
  /** For updates: the field paths of the update mask. */
  readonly changedFields?: readonly string[];
  /**
   * A change no identity makes: an operator's command on the server's machine (`gatehouse
   * keys rotate`) or the server's own upkeep. The event's actor uid is empty and its data
   * names this instead.
   */
  readonly operator?: string;
  /**
   * Event types of outcomes that change something other than the call's own change: a code
   * or refresh token used twice revokes its session (`{ replayed: "…session.revoked.v1" }`).
   */
  readonly outcomeTypes?: Readonly<Record<string, string>>;
  /**
   * Why the change was made when no one asked for it in so many words (Reason): a default
   * role granted at a sign-in, an invite redeemed, the operator's bootstrap. Set by whoever
   * opens the scope (changeScope's `reason`), or by a handler for its call (setCallReason).
   */
  reason?: Reason;
  /**
   * What made the change on the actor's behalf, by uid and name: the identity provider whose
   * default role a sign-in granted, the invite (and its creator) a redemption used.
   */
  via?: Readonly<Record<string, string>>;
  /** Set once the call's event is written: one event per call, with its first change. */
  recorded: boolean;
}

/**
 * Why a change was made, as `data.reason` says it: `identity_provider_default_role` (a role
 * an organization's identity provider grants everyone signing in through it), `invite` (a
 * group invite redeemed), `bootstrap` (`gatehouse bootstrap`), `operator` (another command on
 * the server's machine), `scim` (a SCIM client's provisioning), `expiry` (a grant that ran
 * out). Other subsystems may add theirs.
 */
export type Reason =
  | "identity_provider_default_role"
  | "invite"
  | "bootstrap"
  | "operator"
  | "scim"
  | "expiry"
  | (string & {});

/**
 * The type of a scope that records no event of its own: a v1 adapter's, whose changes are its
 * v2 calls', each recorded in a scope of its own. A write made in it is refused (eventFor).
 */
export const unrecordable = "";

/**
 * The scope of a person's browser sign-in (/oauth/callback): its actor is the person; `via`
 * names the organization's identity provider it went through, if one (whose owners then see
 * it: appendEvent).
 */
export function signInScope(
  requestId: string,
  via?: { identityProviderUid: string; identityProviderName: string },
): AuditScope {
  return changeScope({
    type: "dev.gatehouse.auth.person.signed_in.v1",
    source: "/oauth/callback",
    requestId,
    ...(via ? { via } : {}),
  });
}

/**
 * The types of a person's own events that the owners of the person's organizations see: those
 * where the person holds a role, and the one whose identity provider a sign-in went through.
 */
export const personSessionTypes: ReadonlySet<string> = new Set([
  "dev.gatehouse.auth.person.signed_in.v1",
  "dev.gatehouse.auth.person.signed_out.v1",
  "dev.gatehouse.auth.session.revoked.v1",
]);

/** What changeScope needs: the event's type and source, and who or what makes the change. */
export interface ChangeScopeOptions {
  type: string;
  /** The endpoint or command, e.g. `/oauth/revoke`, `gatehouse keys rotate`. */
  source: string;
  /** The request's id; "" for a command. */
  requestId?: string;
  /** Default `http`; `cli` for an operator's command. */
  protocol?: string;
  /** The identity acting; "" (the default): the subject acts on itself (a sign-in). */
  actorUid?: string;
  /** The subject when the write names none (a signing key's kid). */
  subjectUid?: string;
  /** An operator's command or the server's upkeep: no identity acts. */
  operator?: string;
  /** Event types of other outcomes that change something (AuditScope.outcomeTypes). */
  outcomeTypes?: Readonly<Record<string, string>>;
  /** Why the change is made (AuditScope.reason). */
  reason?: Reason;
  /** What made it on the actor's behalf (AuditScope.via). */
  via?: Readonly<Record<string, string>>;
}

/**
 * The scope of a change made outside an RPC (an OAuth endpoint, a registry notification, an
 * operator's command): the store records it with its change as it does an RPC's.
 */
export function changeScope(opts: ChangeScopeOptions): AuditScope {
  return {
    type: opts.type,
    source: opts.source,
    actorUid: opts.actorUid ?? "",
    requestId: opts.requestId ?? "",
    protocol: opts.protocol ?? "http",
    requestUid: opts.subjectUid ?? "",
    ...(opts.operator !== undefined ? { operator: opts.operator } : {}),
    ...(opts.outcomeTypes ? { outcomeTypes: opts.outcomeTypes } : {}),
    ...(opts.reason !== undefined ? { reason: opts.reason } : {}),
    ...(opts.via !== undefined ? { via: opts.via } : {}),
    recorded: false,
  };
}

/** One event as a store writes it: CloudEvents attributes and the data as JSON text. */
export interface EventRow {
  id: string;
  type: string;
  source: string;
  subject: string;
  /** Milliseconds since the epoch. */
  time: number;
  actorUid: string;
  /** requestId, protocol, changedFields; the store adds the actor and writes it as JSON. */
  data: EventData;
}

/** The data of an event but its actor, which the store completes (withActor). */
export interface EventData {
  requestId: string;
  protocol: string;
  changedFields?: readonly string[];
  operator?: string;
  /** Why the change was made (AuditScope.reason); `operator` for an operator's command. */
  reason?: string;
  /** What made it on the actor's behalf (AuditScope.via). */
  via?: Readonly<Record<string, string>>;
  /** The resource that changed, as named at the change (for a delete: as it was). */
  resource?: ResourceSummary;
  /** For an update: each field that changed, old and new value (a secret: only changed). */
  changes?: Record<string, FieldChange>;
  /** For a delete: what the deleted record held, field by field, secrets left out. */
  deleted?: Record<string, unknown>;
  /** A grant's or revocation's binding, as named at the time (bindingSummaryOf). */
  roleBinding?: BindingSummary;
}

/** Whether a write reports that it replaced an existing record (`putTag`'s `outcome`). */
function isUpdateOutcome(result: unknown): boolean {
  return (
    !!result &&
    typeof result === "object" &&
    (result as { outcome?: unknown }).outcome === "updated"
  );
}

/** Outcome kinds of store operations that report a refusal without throwing. */
// An access request's answer (decideAccessRequest) reports `approved` or `denied`.
const successKinds = new Set(["redeemed", "granted", "revoked", "approved", "denied"]);

/**
 * The event of a write that ran in `scope` and returned `result`, or undefined when the call
 * already has its event or the write changed nothing (an outcome that reports a refusal).
 * `before` is the record an update or a delete changed, as read in its transaction before it
 * (priorReadOf): the event names what a delete removed and an update's old values from it.
 */
export function eventFor(
  scope: AuditScope | undefined,
  args: readonly unknown[],
  result: unknown,
  now: number,
  before?: unknown,
): EventRow | undefined {
  if (!scope || scope.recorded) return undefined;
  // Fail closed: a change with no type of its own would be recorded under none, or a wrong one.
  if (scope.type === unrecordable) {
    throw new Error(`${scope.source}: a write outside a v2 call has no event type`);
  }
  let type = scope.type;
  // A put that moved what was there (CreateTag of a tag's name) is that resource's update, as
  // the registry's push that moves it is: one type per change, whatever made it.
  if (isUpdateOutcome(result)) type = type.replace(/\.created\.v1$/, ".updated.v1");
  if (result && typeof result === "object" && "kind" in result) {
    const kind = String((result as { kind: unknown }).kind);
    const other = scope.outcomeTypes?.[kind];
    if (other !== undefined) type = other;
    else if (!successKinds.has(kind)) return undefined;
  }
  const subject = subjectOf(args, result) || scope.requestUid;
  const prior = recordOf(before);
  const after = recordOf(result);
  // A delete returns nothing (or the record it removed): the event tells what was there.
  const deleting = type.endsWith(".deleted.v1");
  const record = deleting ? (prior ?? after) : (after ?? prior);
  const binding = bindingSummaryOf(type, record ? { binding: record } : result);
  // A command on the server's machine is the operator's reason unless it says a finer one.
  const reason = scope.reason ?? (scope.operator !== undefined ? "operator" : undefined);
  // Built by assignment in the order the JSON has always had (conditional spreads made a
  // temporary object each: this is on every audited write's path).
  const data: { -readonly [K in keyof EventData]: EventData[K] } = {
    requestId: scope.requestId,
    protocol: scope.protocol,
  };
  if (scope.changedFields) data.changedFields = scope.changedFields;
  if (scope.operator !== undefined) data.operator = scope.operator;
  if (reason !== undefined) data.reason = reason;
  if (scope.via !== undefined) data.via = scope.via;
  if (record) data.resource = resourceOf(record);
  if (prior && after && !deleting) data.changes = changesBetween(prior, after);
  if (prior && deleting) data.deleted = snapshotOf(prior);
  if (binding) data.roleBinding = binding;
  return {
    // Time-ordered, as docs/events.md says (event-id.ts).
    id: newEventId(now),
    type,
    source: scope.source,
    subject,
    time: now,
    // A call without a caller is a login: whoever logs in is its actor. An operator is none.
    actorUid: scope.operator !== undefined ? "" : scope.actorUid || subject,
    data,
  };
}

/**
 * The uid a write names: its result's, or that of a record in its result (a put tag, a
 * redeemed binding), or the identity of a session it changed (a refresh, a sign-out), or the
 * created record's or the uid it was given.
 */
function subjectOf(args: readonly unknown[], result: unknown): string {
  const uidOf = (v: unknown) =>
    v && typeof v === "object" && typeof (v as { uid?: unknown }).uid === "string"
      ? (v as { uid: string }).uid
      : "";
  const own = uidOf(result);
  if (own) return own;
  if (result && typeof result === "object") {
    for (const value of Object.values(result)) {
      const inner = uidOf(value);
      if (inner) return inner;
    }
    const identity = (result as { identityUid?: unknown }).identityUid;
    if (typeof identity === "string" && identity !== "") return identity;
  }
  const first = args[0];
  return uidOf(first) || (typeof first === "string" && isUid(first) ? first : "");
}

/** The event's data with its actor: the identity uid, and a person's issuer and subject. */
export function withActor(row: EventRow, who?: { issuer: string; subject: string }): string {
  const text = actorJsonOf(row);
  return `${text.head}${who?.issuer ? actorIssuerJson(who.issuer, who.subject) : ""}${text.tail}`;
}

/**
 * The event's data as JSON in two parts around the actor's issuer and subject: `head` ends
 * inside the actor object after its uid, `tail` closes it and holds the rest of the data. The
 * data is serialized once (JSON.stringify of the data, then spliced): a store completes it with
 * the actor's issuer and subject, in JavaScript or in its INSERT (ops/events.ts).
 */
export function actorJsonOf(row: EventRow): { head: string; tail: string } {
  // The data always holds requestId and protocol: `{"requestId":…}`, never `{}`.
  return {
    head: `{"actor":{"uid":${JSON.stringify(row.actorUid)}`,
    tail: `},${JSON.stringify(row.data).slice(1)}`,
  };
}

/** The part of an actor's JSON a person's issuer and subject add (withActor). */
export function actorIssuerJson(issuer: string, subject: string): string {
  return `,"issuer":${JSON.stringify(issuer)},"subject":${JSON.stringify(subject)}`;
}

/** The list columns of an event row: a child of its subject, in its organization. */
export function eventPlacement(row: EventRow): { uid: string; groupUid: string } {
  const slash = row.subject.indexOf("/");
  return {
    uid: `${row.subject}/${row.id}`,
    groupUid: slash < 0 ? row.subject : row.subject.slice(0, slash),
  };
}
