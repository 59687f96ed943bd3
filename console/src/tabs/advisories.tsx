import { useState } from "preact/hooks";
import {
  type Advisory,
  EventType,
} from "../../../gen/gatehouse/vulnerabilities/v2beta1/advisories_pb.js";
import { api } from "../api.js";
import { ListView, time } from "../components.js";

/** An advisory's severities as the data gives them (`CVSS_V3 7.5`), or "not given". */
function severityOf(a: Advisory): string {
  return a.severities.map((s) => `${s.type} ${s.score}`.trim()).join(", ") || "not given";
}

/** Search the advisories at and below a group. */
export function AdvisoriesTab({ uid }: { uid: string }) {
  const [search, setSearch] = useState({ query: "", aliases: "", componentName: "" });
  const [draft, setDraft] = useState(search);
  const [open, setOpen] = useState<Advisory | undefined>();
  const [reload, setReload] = useState(0);
  return (
    <>
      <h2>Advisories</h2>
      <form
        class="search"
        aria-label="Search advisories"
        onSubmit={(e) => {
          e.preventDefault();
          setSearch(draft);
          setReload(reload + 1);
        }}
      >
        <label>
          Text (id, alias, package)
          <input
            name="query"
            value={draft.query}
            onInput={(e) => setDraft({ ...draft, query: e.currentTarget.value })}
          />
        </label>
        <label>
          Alias (CVE, GHSA…)
          <input
            name="aliases"
            value={draft.aliases}
            onInput={(e) => setDraft({ ...draft, aliases: e.currentTarget.value })}
          />
        </label>
        <label>
          Package
          <input
            name="componentName"
            value={draft.componentName}
            onInput={(e) => setDraft({ ...draft, componentName: e.currentTarget.value })}
          />
        </label>
        <button type="submit">Search</button>
      </form>
      <ListView<Advisory>
        label="Advisories"
        nameLabel="Advisory id"
        reload={reload}
        load={async (q) => {
          const r = await api.advisories.listAdvisories({
            uidp: { descendantsOf: uid },
            ...q,
            ...search,
          });
          return { items: r.advisories, nextPageToken: r.nextPageToken, totalCount: r.totalCount };
        }}
        columns={[
          {
            title: "Advisory",
            render: (a) => (
              <button type="button" class="link" onClick={() => setOpen(a)}>
                {a.advisoryId}
              </button>
            ),
          },
          { title: "Aliases", render: (a) => a.aliases.join(", ") },
          { title: "Package", render: (a) => a.componentName || a.artifactName },
          { title: "Severity", render: (a) => severityOf(a) },
          { title: "Latest event", render: (a) => EventType[a.latestEventType] ?? "" },
        ]}
      />
      {open && (
        <section class="detail" aria-label={`Advisory ${open.advisoryId}`}>
          <h3>{open.advisoryId}</h3>
          <p>{open.summary}</p>
          <p>Severity: {severityOf(open)}</p>
          <h4>Events</h4>
          <ol>
            {open.events.map((e, i) => (
              <li key={i}>
                {time(e.time)} {EventType[e.type]}
                {e.fixedVersion ? ` (fixed in ${e.fixedVersion})` : ""}
                {e.note ? `: ${e.note}` : ""}
              </li>
            ))}
          </ol>
        </section>
      )}
    </>
  );
}
