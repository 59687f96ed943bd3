import { useEffect, useState } from "preact/hooks";
import type { Group } from "../../../gen/gatehouse/iam/v2beta1/groups_pb.js";
import { api } from "../api.js";
import { all, ancestors } from "../pickers.js";
import { groupHref } from "../routes.js";

/** One group of the tree and, once opened, its children. */
function Branch(props: { uid: string; name: string; current: string; path: readonly string[] }) {
  const { uid, name, current, path } = props;
  // The groups on the way to the page's group start open.
  const [open, setOpen] = useState(path.includes(uid));
  const [children, setChildren] = useState<Group[] | undefined>();
  useEffect(() => {
    if (!open || children) return;
    all((pageToken) =>
      api.groups
        .listGroups({ uidp: { childrenOf: uid }, pageSize: 200, pageToken, orderBy: "name" })
        .then((r) => ({ items: r.groups, nextPageToken: r.nextPageToken })),
    )
      .then(setChildren)
      .catch(() => setChildren([]));
  }, [open, uid]);
  return (
    <li>
      <button
        type="button"
        class="toggle"
        aria-expanded={open}
        aria-label={`${open ? "Close" : "Open"} ${name}`}
        onClick={() => setOpen(!open)}
      >
        {open ? "−" : "+"}
      </button>{" "}
      <a
        href={groupHref(uid, "tree")}
        title={uid}
        aria-current={uid === current ? "page" : undefined}
      >
        {name}
      </a>
      {open && children && children.length > 0 && (
        <ul>
          {children.map((g) => (
            <Branch key={g.uid} uid={g.uid} name={g.name} current={current} path={path} />
          ))}
        </ul>
      )}
    </li>
  );
}

/**
 * The group tree, opened down to the page's group: move through the hierarchy by name. It
 * starts at the highest group above this one that the caller may read without a gap (the
 * organization for its members; for someone bound lower down, the group they were bound at),
 * asked with one List of the ancestors, which answers only what the caller may read (no 403
 * for the groups it may not). Groups the caller may not list are not shown.
 */
export function TreeTab({ uid, groupName }: { uid: string; groupName: string }) {
  // undefined while loading.
  const [top, setTop] = useState<{ uid: string; name: string } | undefined>();
  useEffect(() => {
    let live = true;
    all((pageToken) =>
      api.groups
        .listGroups({ uidp: { ancestorsOf: uid }, pageSize: 200, pageToken })
        .then((r) => ({ items: r.groups, nextPageToken: r.nextPageToken })),
    )
      .catch(() => [] as Group[])
      .then((above) => {
        const readable = new Map(above.map((g) => [g.uid, g.name]));
        let highest = { uid, name: groupName };
        for (const a of ancestors(uid).reverse().slice(1)) {
          const name = readable.get(a);
          if (name === undefined) break;
          highest = { uid: a, name };
        }
        if (live) setTop(highest);
      });
    return () => {
      live = false;
    };
  }, [uid, groupName]);
  return (
    <>
      <h2>Group tree</h2>
      <nav aria-label="Group tree" class="tree">
        {top && (
          <ul>
            <Branch uid={top.uid} name={top.name} current={uid} path={ancestors(uid)} />
          </ul>
        )}
      </nav>
    </>
  );
}
