import { useState } from "preact/hooks";
import type { Group } from "../../../gen/gatehouse/iam/v2beta1/groups_pb.js";
import { api } from "../api.js";
import type { Can } from "../caps.js";
import { FormView, ListView, time } from "../components.js";
import { groupHref } from "../routes.js";

/** A group's subgroups, and the form to create one. */
export function SubgroupsTab({ uid, can }: { uid: string; can: Can }) {
  const [reload, setReload] = useState(0);
  return (
    <>
      <h2>Subgroups</h2>
      <ListView<Group>
        label="Subgroups"
        reload={reload}
        load={async (q) => {
          const r = await api.groups.listGroups({ uidp: { childrenOf: uid }, ...q });
          return { items: r.groups, nextPageToken: r.nextPageToken, totalCount: r.totalCount };
        }}
        columns={[
          { title: "Name", render: (g) => <a href={groupHref(g.uid)}>{g.name}</a> },
          { title: "Description", render: (g) => g.description },
          { title: "Created", render: (g) => time(g.createTime) },
        ]}
      />
      {can("groups.create") && (
        <FormView
          title="Create a subgroup"
          submitLabel="Create subgroup"
          fields={[
            { name: "name", label: "Name", required: true },
            { name: "description", label: "Description" },
          ]}
          onSubmit={async (v) => {
            await api.groups.createGroup({
              parent: uid,
              group: { name: v.name as string, description: v.description as string },
            });
            setReload(reload + 1);
          }}
        />
      )}
    </>
  );
}
