import type { ComponentChildren } from "preact";
import { useEffect, useState } from "preact/hooks";
import { type Problem, problemOf } from "./api.js";
import { useNavigations } from "./navigation.js";

/**
 * An API error: its message, and each field violation not shown beside a field of the form
 * (`placed`: the names of the fields that show their own).
 */
export function ProblemBox(props: { problem: Problem | undefined; placed?: readonly string[] }) {
  const { problem, placed = [] } = props;
  if (!problem) return null;
  const atField = (v: { field: string }) => placed.includes(v.field.split(".").pop() ?? v.field);
  const rest = problem.violations.filter(
    (v) => !atField(v) && !problem.message.endsWith(`${v.field}: ${v.description}`),
  );
  // Every violation is shown beside its field: the status message would only repeat the
  // first of them, so the box says where to look instead.
  const n = problem.violations.length;
  const message =
    n > 0 && problem.violations.every(atField)
      ? n === 1
        ? "check the field marked below"
        : `check the ${n} fields marked below`
      : problem.message;
  return (
    <div class="problem" role="alert">
      <strong>{problem.code}</strong>: {message}
      {rest.length > 0 && (
        <ul>
          {rest.map((v) => (
            <li key={v.field}>
              <code>{v.field}</code>: {v.description}
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}

/** One page of a list, as the console asks for it. */
export interface PageQuery {
  pageSize: number;
  pageToken: string;
  orderBy: string;
  name: string;
}

/** What a list call answered. */
export interface Page<T> {
  items: T[];
  nextPageToken?: string | undefined;
  totalCount: bigint;
}

export interface Column<T> {
  title: string;
  render(item: T): ComponentChildren;
}

/**
 * A paged list: name filter, ordering, "n–m of total" from totalCount, and Next/Previous
 * following nextPageToken (the tokens of earlier pages are kept to go back).
 */
export function ListView<T>(props: {
  label: string;
  load: (q: PageQuery) => Promise<Page<T>>;
  columns: Column<T>[];
  /** Change it to reload from the first page. */
  reload?: number;
  pageSize?: number;
  /** What the API's `name` filter and order mean for this list (a binding's is its role's). */
  nameLabel?: string;
  /** The orders offered, the first by default (the usual ones when not given). */
  orders?: [value: string, label: string][];
  /** The filter box's hint (default: exact match). */
  filterHint?: string;
}) {
  const pageSize = props.pageSize ?? 50;
  const nameLabel = props.nameLabel ?? "Name";
  const orders = props.orders ?? [
    ["name", nameLabel.toLowerCase()],
    ["name desc", `${nameLabel.toLowerCase()}, descending`],
    ["create_time", "oldest first"],
    ["create_time desc", "newest first"],
    ["update_time desc", "recently changed"],
  ];
  const [name, setName] = useState("");
  const [filter, setFilter] = useState("");
  const [orderBy, setOrderBy] = useState(orders[0]?.[0] ?? "name");
  const [tokens, setTokens] = useState<string[]>([""]);
  const [page, setPage] = useState<Page<T> | undefined>();
  // Counts the person's asks to read the list again (Refresh, Filter): each one fetches, even
  // when nothing else changed, so a change made elsewhere shows.
  const [asked, setAsked] = useState(0);
  // Every navigation reads the list again, a click on the active tab too (navigation.ts).
  const navigations = useNavigations();
  const [problem, setProblem] = useState<Problem | undefined>();
  const token = tokens[tokens.length - 1] ?? "";

  useEffect(() => {
    setTokens([""]);
  }, [props.reload, filter, orderBy]);
  useEffect(() => {
    let live = true;
    props
      .load({ pageSize, pageToken: token, orderBy, name: filter })
      .then((p) => {
        if (!live) return;
        setPage(p);
        setProblem(undefined);
      })
      .catch((err) => live && setProblem(problemOf(err)));
    return () => {
      live = false;
    };
  }, [token, props.reload, filter, orderBy, asked, navigations]);

  const first = (tokens.length - 1) * pageSize;
  const slug = props.label.toLowerCase().replace(/\W+/g, "-");
  return (
    <section class="list" aria-label={props.label}>
      <form
        class="list-controls"
        onSubmit={(e) => {
          e.preventDefault();
          setFilter(name);
          setAsked(asked + 1);
        }}
      >
        <label>
          {nameLabel}
          <input
            name="filter"
            value={name}
            onInput={(e) => setName(e.currentTarget.value)}
            placeholder={props.filterHint ?? "exact match"}
          />
        </label>
        <button type="submit">Filter</button>
        <label>
          Order
          <select name="order" value={orderBy} onChange={(e) => setOrderBy(e.currentTarget.value)}>
            {orders.map(([value, label]) => (
              <option key={value} value={value}>
                {label}
              </option>
            ))}
          </select>
        </label>
        <button type="button" onClick={() => setAsked(asked + 1)}>
          Refresh
        </button>
      </form>
      <ProblemBox problem={problem} />
      {page && (
        <>
          <p class="count" id={`${slug}-count`}>
            {page.totalCount === 0n
              ? "None"
              : page.items.length === 0
                ? `None here of ${page.totalCount}`
                : `${first + 1}–${first + page.items.length} of ${page.totalCount}`}
          </p>
          <table>
            <thead>
              <tr>
                {props.columns.map((c) => (
                  <th key={c.title} scope="col">
                    {c.title}
                  </th>
                ))}
              </tr>
            </thead>
            <tbody>
              {page.items.map((item, i) => (
                <tr key={i}>
                  {props.columns.map((c) => (
                    <td key={c.title}>{c.render(item)}</td>
                  ))}
                </tr>
              ))}
            </tbody>
          </table>
          {(tokens.length > 1 || page.nextPageToken) && (
            <nav class="pager" aria-label={`${props.label} pages`}>
              <button
                type="button"
                disabled={tokens.length === 1}
                onClick={() => setTokens(tokens.slice(0, -1))}
              >
                Previous page
              </button>
              <button
                type="button"
                disabled={!page.nextPageToken}
                onClick={() => page.nextPageToken && setTokens([...tokens, page.nextPageToken])}
              >
                Next page
              </button>
            </nav>
          )}
        </>
      )}
    </section>
  );
}

/** A form field. */
export interface Field {
  name: string;
  label: string;
  type?: "text" | "select" | "checkboxes" | "password" | "checkbox" | "textarea";
  options?: { value: string; label: string }[];
  /** A select with a search box: the options whose name contains what is typed. */
  search?: boolean;
  required?: boolean;
  initial?: string;
}

/**
 * A form whose errors come from the API: the status message on top and each field violation
 * next to its field (matched by the field's name).
 */
export function FormView(props: {
  title: string;
  fields: Field[];
  submitLabel: string;
  onSubmit: (values: Record<string, string | string[]>) => Promise<void>;
}) {
  const initial = () =>
    Object.fromEntries(
      props.fields.map((f) => [f.name, f.type === "checkboxes" ? [] : (f.initial ?? "")]),
    ) as Record<string, string | string[]>;
  const [values, setValues] = useState(initial);
  const [problem, setProblem] = useState<Problem | undefined>();
  const [busy, setBusy] = useState(false);
  const [searches, setSearches] = useState<Record<string, string>>({});
  const id = props.title.toLowerCase().replace(/\W+/g, "-");
  const set = (name: string, v: string | string[]) => setValues({ ...values, [name]: v });
  return (
    <form
      class="form"
      aria-labelledby={`${id}-title`}
      onSubmit={async (e) => {
        e.preventDefault();
        setBusy(true);
        try {
          await props.onSubmit(values);
          setProblem(undefined);
          setValues(initial());
          setSearches({});
        } catch (err) {
          setProblem(problemOf(err));
        } finally {
          setBusy(false);
        }
      }}
    >
      <h3 id={`${id}-title`}>{props.title}</h3>
      <ProblemBox problem={problem} placed={props.fields.map((f) => f.name)} />
      {props.fields.map((f) => {
        const error = problem?.fields[f.name];
        const errorId = `${id}-${f.name}-error`;
        const inputId = `${id}-${f.name}`;
        const described = {
          id: inputId,
          ...(error ? { "aria-describedby": errorId, "aria-invalid": true } : {}),
        };
        let input: ComponentChildren;
        if (f.type === "select") {
          const q = (searches[f.name] ?? "").trim().toLowerCase();
          const shown = (f.options ?? []).filter(
            (o) => q === "" || o.label.toLowerCase().includes(q) || o.value === values[f.name],
          );
          input = (
            <>
              {f.search && (
                <input
                  type="search"
                  aria-label={`Search ${f.label.toLowerCase()} by name`}
                  placeholder="search by name"
                  value={searches[f.name] ?? ""}
                  onInput={(e) => {
                    const text = e.currentTarget.value;
                    setSearches({ ...searches, [f.name]: text });
                    // One match: chosen at once, as a person expects from a search.
                    const t = text.trim().toLowerCase();
                    const hits = (f.options ?? []).filter((o) => o.label.toLowerCase().includes(t));
                    if (t !== "" && hits.length === 1 && hits[0]) set(f.name, hits[0].value);
                  }}
                />
              )}
              <select
                name={f.name}
                value={values[f.name] as string}
                onChange={(e) => set(f.name, e.currentTarget.value)}
                {...described}
              >
                <option value="">choose…</option>
                {shown.map((o) => (
                  <option key={o.value} value={o.value}>
                    {o.label}
                  </option>
                ))}
              </select>
            </>
          );
        } else if (f.type === "checkboxes") {
          const chosen = values[f.name] as string[];
          return (
            <fieldset
              key={f.name}
              class="checkboxes"
              aria-describedby={error ? errorId : undefined}
            >
              <legend>{f.label}</legend>
              {f.options?.map((o) => (
                <label key={o.value}>
                  <input
                    type="checkbox"
                    name={f.name}
                    value={o.value}
                    checked={chosen.includes(o.value)}
                    onChange={(e) =>
                      set(
                        f.name,
                        e.currentTarget.checked
                          ? [...chosen, o.value]
                          : chosen.filter((c) => c !== o.value),
                      )
                    }
                  />
                  {o.label}
                </label>
              ))}
              {error && (
                <span class="field-error" id={errorId}>
                  {error}
                </span>
              )}
            </fieldset>
          );
        } else if (f.type === "checkbox") {
          input = (
            <input
              type="checkbox"
              id={inputId}
              name={f.name}
              checked={values[f.name] === "true"}
              onChange={(e) => set(f.name, e.currentTarget.checked ? "true" : "")}
            />
          );
        } else {
          const common = {
            name: f.name,
            value: values[f.name] as string,
            required: f.required === true,
            onInput: (e: { currentTarget: HTMLInputElement }) => set(f.name, e.currentTarget.value),
            ...described,
          };
          input =
            f.type === "password" ? (
              <input type="password" {...common} />
            ) : f.type === "textarea" ? (
              <textarea rows={3} {...common} onInput={(e) => set(f.name, e.currentTarget.value)} />
            ) : (
              <input type="text" {...common} />
            );
        }
        return (
          <div class="field" key={f.name}>
            <label for={inputId}>{f.label}</label>
            {input}
            {error && (
              <span class="field-error" id={errorId}>
                {error}
              </span>
            )}
          </div>
        );
      })}
      <button type="submit" disabled={busy}>
        {props.submitLabel}
      </button>
    </form>
  );
}

/** A button that asks first, then runs `action`; its error is shown beside it. */
export function ConfirmButton(props: {
  label: string;
  confirm: string;
  action: () => Promise<void>;
}) {
  const [problem, setProblem] = useState<Problem | undefined>();
  return (
    <span>
      <button
        type="button"
        class="danger"
        onClick={async () => {
          if (!window.confirm(props.confirm)) return;
          try {
            await props.action();
            setProblem(undefined);
          } catch (err) {
            setProblem(problemOf(err));
          }
        }}
      >
        {props.label}
      </button>
      <ProblemBox problem={problem} />
    </span>
  );
}

/** A Timestamp as a short local date and time. */
export function time(t: { seconds: bigint; nanos: number } | undefined): string {
  if (!t) return "";
  return new Date(Number(t.seconds) * 1000 + Math.floor(t.nanos / 1e6))
    .toISOString()
    .replace("T", " ")
    .slice(0, 19);
}

/**
 * `text` in a code span with a button that copies it (a pull reference, say). `shown` is what
 * is displayed when it differs (a tag list shows only `:tag`); the button names the whole text,
 * or `label` (a secret's button should not read the secret aloud).
 */
export function CopyText(props: { text: string; shown?: string; label?: string }) {
  const [copied, setCopied] = useState("");
  return (
    <span class="copy">
      <code>{props.shown ?? props.text}</code>{" "}
      <button
        type="button"
        aria-label={props.label ?? `Copy ${props.text}`}
        onClick={async () => {
          // No clipboard outside a secure context (plain http to a remote host): say so.
          try {
            await navigator.clipboard.writeText(props.text);
            setCopied(" Copied");
          } catch {
            setCopied(" Copy failed: select the text instead");
          }
        }}
      >
        Copy
      </button>
      {/* Announced to screen readers once the text is on the clipboard. */}
      <span role="status">{copied}</span>
    </span>
  );
}
