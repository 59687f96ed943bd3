import { useEffect, useState } from "preact/hooks";
import type { Group } from "../../../gen/gatehouse/iam/v2beta1/groups_pb.js";
import { api } from "../api.js";
import { all, ancestors, orgOf } from "../pickers.js";
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
 * The group tree of the organization, opened down to the page's group: move through the
 * hierarchy by name. Groups the caller may not list are not shown.
 */
export function TreeTab({ uid, groupName }: { uid: string; groupName: string }) {
  const org = orgOf(uid);
  // undefined while loading; null when the caller may not read the organization itself.
  const [orgName, setOrgName] = useState<string | null | undefined>();
  useEffect(() => {
    api.groups
      .getGroup({ uid: org })
      .then((g) => setOrgName(g.name))
      .catch(() => setOrgName(null));
  }, [org]);
  return (
    <>
      <h2>Group tree</h2>
      <nav aria-label="Group tree" class="tree">
        {orgName === undefined ? null : orgName === null ? (
          <ul>
            <Branch uid={uid} name={groupName} current={uid} path={[uid]} />
          </ul>
        ) : (
          <ul>
            <Branch uid={org} name={orgName} current={uid} path={ancestors(uid)} />
          </ul>
        )}
      </nav>
    </>
  );
}
