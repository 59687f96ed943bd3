import { useEffect, useState } from "preact/hooks";
import type { Event } from "../../../gen/gatehouse/events/v2beta1/events_pb.js";
import { api } from "../api.js";
import { ListView } from "../components.js";
import { orgOf, usePickers } from "../pickers.js";
import { groupHref } from "../routes.js";

/** An event's type in words: `dev.gatehouse.iam.role_binding.created.v1` is "role binding created". */
export function typeInWords(type: string): string {
  // dev.gatehouse.<domain>.<resource>.<verb>.v1: the resource and the verb are what a person reads.
  const parts = type.split(".");
  if (parts.length < 6 || parts[0] !== "dev" || parts[1] !== "gatehouse") return type;
  return parts
    .slice(3, -1)
    .map((p) => p.replaceAll("_", " "))
    .join(" ");
}

type Json = Record<string, unknown>;
const isJson = (v: unknown): v is Json => !!v && typeof v === "object" && !Array.isArray(v);
const text = (v: unknown): string => (typeof v === "string" ? v : "");

/** The families of events a person picks from, in words (ListEvents' `type` families). */
export const eventFamilies: [family: string, words: string][] = [
  ["", "every change"],
  ["role_binding,group_invite.redeemed", "grants and revocations"],
  ["auth.person,auth.session", "sign-ins and sign-outs"],
  ["group", "groups"],
  ["identity", "identities"],
  ["role", "roles"],
  ["group_invite", "invites"],
  ["identity_provider", "identity providers"],
  ["account_association", "account links"],
  ["repo,tag", "repositories and tags"],
  ["advisory", "advisories"],
  ["subscription", "webhook subscriptions"],
];

/** Why a change was made, in words (data.reason). */
const reasonWords: Record<string, string> = {
  identity_provider_default_role: "default role of an identity provider",
  invite: "invite redeemed",
  bootstrap: "gatehouse bootstrap",
  operator: "operator",
  scim: "SCIM provisioning",
  expiry: "expired",
};

/** The part of an event's data the console shows (the rest is in the API's answer). */
function dataOf(e: Event) {
  const data = (e.data ?? {}) as Json;
  const actor = isJson(data.actor) ? text(data.actor.uid) : "";
  const resource = isJson(data.resource) ? data.resource : {};
  const binding = isJson(data.roleBinding) ? data.roleBinding : undefined;
  const named = (k: string) => (binding && isJson(binding[k]) ? text(binding[k].name) : "");
  // A binding reads as who, which role, where: what a reviewer asks of a grant.
  const subject = binding
    ? `${named("identity")} as ${named("role")} at ${named("group")}`
    : text(resource.name);
  const changes = isJson(data.changes)
    ? Object.entries(data.changes).map(([field, c]) =>
        isJson(c) && "old" in c ? `${field}: ${show(c.old)} → ${show(c.new)}` : `${field} changed`,
      )
    : Array.isArray(data.changedFields)
      ? data.changedFields.filter((f): f is string => typeof f === "string")
      : [];
  const reason = text(data.reason);
  // Where the binding was made: a redeemed invite's subject is the invite, what it shows the
  // binding, whose group's Role bindings is where a reviewer goes.
  const bindingGroup = binding && isJson(binding.group) ? text(binding.group.uid) : "";
  return {
    ...(actor ? { actor } : {}),
    ...(bindingGroup ? { bindingGroup } : {}),
    subject,
    changes,
    reason: reasonWords[reason] ?? reason,
  };
}

/** A value of an event's `changes` as a person reads it: a reference by its name. */
function show(v: unknown): string {
  if (isJson(v)) return text(v.name) || text(v.uid) || JSON.stringify(v);
  if (v === "" || v === null || v === undefined) return "(none)";
  return typeof v === "string" ? v : JSON.stringify(v);
}

/** The group a resource's uid sits in: its uid up to the last `/` ("" for a root uid). */
function groupOfUid(uid: string): string {
  const at = uid.lastIndexOf("/");
  return at < 0 ? "" : uid.slice(0, at);
}

/** The group page's tab that lists each kind of resource, by the word of its event type. */
const tabOfResource: Record<string, string> = {
  identity: "identities",
  role: "roles",
  role_binding: "bindings",
  team: "teams",
  repo: "repos",
  group_invite: "invites",
  identity_provider: "providers",
  advisory: "advisories",
  access_request: "access-requests",
};

/**
 * Where the console shows the subject of an event of `type` in organization `org`: a group's
 * own page (a deleted one's parent), the tab of its group that lists it (a tag: its repo's
 * group's repos), a person's organization's People; undefined where the console has no page
 * (a webhook subscription, a built-in role, a signing key).
 */
export function subjectHref(type: string, subject: string, org: string): string | undefined {
  const parts = type.split(".");
  const [domain, resource, verb] = [parts[2], parts[3], parts[4]];
  if (parts[0] !== "dev" || parts[1] !== "gatehouse" || !resource) return undefined;
  const group = groupOfUid(subject);
  // Outside the organization (nothing listed here should be): no link to someone else's page.
  if (subject !== org && !subject.startsWith(`${org}/`) && domain !== "auth") return undefined;
  if (resource === "group") {
    if (verb !== "deleted") return groupHref(subject);
    return group ? groupHref(group) : undefined;
  }
  if (resource === "account_association") return groupHref(subject, "account");
  if (resource === "tag")
    return groupOfUid(group) ? groupHref(groupOfUid(group), "repos") : undefined;
  // A person lives in no group: the organization's People tab lists them.
  if (domain === "auth" && (resource === "person" || resource === "session")) {
    return groupHref(org, "people");
  }
  if (resource === "identity" && group === "") return groupHref(org, "people");
  const tab = tabOfResource[resource];
  return tab && group ? groupHref(group, tab) : undefined;
}

/** The Role bindings of the group where an event's binding was made, if it shows one. */
function bindingHref(e: Event, org: string): string | undefined {
  const { bindingGroup } = dataOf(e);
  const inOrg = bindingGroup === org || bindingGroup?.startsWith(`${org}/`);
  return bindingGroup && inOrg ? groupHref(bindingGroup, "bindings") : undefined;
}

/**
 * A uid by the name the console knows for it, or the event's own, the uid on hover; a link to
 * its page where the console has one.
 */
function Named({
  uid,
  names,
  fallback,
  kind,
  href,
}: {
  uid: string;
  names: Map<string, string>;
  fallback?: string;
  kind: string;
  href?: string | undefined;
}) {
  const name = names.get(uid) || fallback;
  const shown = name ? (
    <span title={uid}>{name}</span>
  ) : (
    <span class="uid" title={uid}>
      {/^[aeiou]/.test(kind) ? "an" : "a"} {kind}
    </span>
  );
  return href ? <a href={href}>{shown}</a> : shown;
}

/**
 * The organization's audit trail (ListEvents), newest first: when, what happened in words, to
 * what and by whom (by name where the console knows it), and the fields an update changed.
 */
export function EventsTab({ uid, groupName }: { uid: string; groupName: string }) {
  const org = orgOf(uid);
  const { identities, roles } = usePickers(uid, 0);
  const [groups, setGroups] = useState<[string, string][]>([]);
  useEffect(() => {
    // The first page of the organization's groups is enough to name most subjects by.
    api.groups
      .listGroups({ uidp: { descendantsOf: org }, pageSize: 200 })
      .then((r) => setGroups(r.groups.map((g) => [g.uid, g.name])))
      .catch(() => setGroups([]));
  }, [org]);
  const names = new Map<string, string>([
    ...groups,
    ...identities.map((o) => [o.value, o.label] as const),
    ...roles.map((o) => [o.value, o.label] as const),
    [uid, groupName],
  ]);
  const [family, setFamily] = useState("");
  const [actor, setActor] = useState("");
  const [reload, setReload] = useState(0);
  return (
    <>
      <h2>Events</h2>
      <p>
        Every change made in this organization, by whom, when and why, and its people's sign-ins.
      </p>
      <form class="filters" onSubmit={(ev) => ev.preventDefault()}>
        <label>
          What{" "}
          <select
            value={family}
            onChange={(ev) => {
              setFamily(ev.currentTarget.value);
              setReload((n) => n + 1);
            }}
          >
            {eventFamilies.map(([value, words]) => (
              <option key={value} value={value}>
                {words}
              </option>
            ))}
          </select>
        </label>{" "}
        <label>
          By{" "}
          <select
            value={actor}
            onChange={(ev) => {
              setActor(ev.currentTarget.value);
              setReload((n) => n + 1);
            }}
          >
            <option value="">anyone</option>
            {identities.map((o) => (
              <option key={o.value} value={o.value}>
                {o.label}
              </option>
            ))}
          </select>
        </label>
      </form>
      <ListView<Event>
        label="Events"
        reload={reload}
        nameLabel="Type"
        orders={[
          ["create_time desc", "newest first"],
          ["create_time", "oldest first"],
        ]}
        load={async (q) => {
          const r = await api.events.listEvents({
            ...q,
            uidp: { descendantsOf: org },
            ...(family ? { type: family } : {}),
            ...(actor ? { actor } : {}),
          });
          return { items: r.events, nextPageToken: r.nextPageToken, totalCount: r.totalCount };
        }}
        columns={[
          {
            title: "Time",
            render: (e) => {
              const at = e.time
                ? new Date(Number(e.time.seconds) * 1000 + e.time.nanos / 1e6)
                : undefined;
              return at ? <time dateTime={at.toISOString()}>{at.toLocaleString()}</time> : "";
            },
          },
          {
            title: "Event",
            render: (e) => {
              const { reason } = dataOf(e);
              const words = typeInWords(e.type);
              // "group invite redeemed" says its reason already.
              const why = reason && !words.endsWith(reason) ? reason : "";
              return (
                <span title={e.type}>
                  {words}
                  {why ? <small class="reason"> ({why})</small> : ""}
                </span>
              );
            },
          },
          {
            title: "Subject",
            render: (e) => (
              <Named
                uid={e.subject}
                names={names}
                fallback={dataOf(e).subject}
                kind={typeInWords(e.type).split(" ").slice(0, -1).join(" ")}
                href={bindingHref(e, org) ?? subjectHref(e.type, e.subject, org)}
              />
            ),
          },
          {
            title: "By",
            render: (e) => {
              const { actor } = dataOf(e);
              if (!actor) return "";
              // An identity of the organization: its Identities tab; a person: People.
              const href = actor.includes("/")
                ? subjectHref("dev.gatehouse.iam.identity.updated.v1", actor, org)
                : groupHref(org, "people");
              return <Named uid={actor} names={names} kind="identity" href={href} />;
            },
          },
          { title: "Changes", render: (e) => dataOf(e).changes.join("; ") },
        ]}
      />
    </>
  );
}
