import { useEffect, useState } from "preact/hooks";
import type { Event } from "../../../gen/gatehouse/events/v2beta1/events_pb.js";
import { api } from "../api.js";
import { ListView } from "../components.js";
import { orgOf, usePickers } from "../pickers.js";

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

/** The part of an event's data the console shows (the rest is in the API's answer). */
function dataOf(e: Event): { actor?: string; changed: string[] } {
  const data = e.data ?? {};
  const actor = data.actor;
  const uid =
    actor && typeof actor === "object" && !Array.isArray(actor) && typeof actor.uid === "string"
      ? actor.uid
      : undefined;
  const changed = Array.isArray(data.changedFields)
    ? data.changedFields.filter((f): f is string => typeof f === "string")
    : [];
  return { ...(uid ? { actor: uid } : {}), changed };
}

/** A uid by the name the console knows for it, or by its resource's kind, the uid on hover. */
function Named({ uid, names, kind }: { uid: string; names: Map<string, string>; kind: string }) {
  const name = names.get(uid);
  return name ? (
    <span title={uid}>{name}</span>
  ) : (
    <span class="uid" title={uid}>
      {/^[aeiou]/.test(kind) ? "an" : "a"} {kind}
    </span>
  );
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
  return (
    <>
      <h2>Events</h2>
      <p>Every change made in this organization, by whom and when. Filter by an event type.</p>
      <ListView<Event>
        label="Events"
        nameLabel="Type"
        orders={[
          ["create_time desc", "newest first"],
          ["create_time", "oldest first"],
        ]}
        load={async (q) => {
          const r = await api.events.listEvents({ ...q, uidp: { descendantsOf: org } });
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
          { title: "Event", render: (e) => <span title={e.type}>{typeInWords(e.type)}</span> },
          {
            title: "Subject",
            render: (e) => (
              <Named
                uid={e.subject}
                names={names}
                kind={typeInWords(e.type).split(" ").slice(0, -1).join(" ")}
              />
            ),
          },
          {
            title: "By",
            render: (e) => {
              const { actor } = dataOf(e);
              return actor ? <Named uid={actor} names={names} kind="identity" /> : "";
            },
          },
          { title: "Changed fields", render: (e) => dataOf(e).changed.join(", ") },
        ]}
      />
    </>
  );
}
