import { useState } from "preact/hooks";
import { capabilities } from "../../../src/auth/capability-catalog.js";
import { api } from "../api.js";
import type { Can } from "../caps.js";
import { ConfirmButton, FormView, ListView } from "../components.js";

/** The roles visible from a group, and the form to create a custom one. */
export function RolesTab({ uid, can }: { uid: string; can: Can }) {
  const [reload, setReload] = useState(0);
  return (
    <>
      <h2>Roles</h2>
      <p>Built-in roles exist everywhere; custom roles belong to a group and those below it.</p>
      <ListView
        label="Roles"
        reload={reload}
        load={async (q) => {
          const r = await api.roles.listRoles(q);
          return { items: r.roles, nextPageToken: r.nextPageToken, totalCount: r.totalCount };
        }}
        columns={[
          { title: "Name", render: (r) => r.name },
          { title: "Kind", render: (r) => (r.uid.includes("/") ? "custom" : "built-in") },
          { title: "Capabilities", render: (r) => r.capabilities.join(", ") },
          {
            title: "Delete",
            render: (r) =>
              r.uid.includes("/") && can("roles.delete") ? (
                <ConfirmButton
                  label="Delete"
                  confirm={`Delete the role ${r.name}?`}
                  action={async () => {
                    await api.roles.deleteRole({ uid: r.uid });
                    setReload(reload + 1);
                  }}
                />
              ) : (
                ""
              ),
          },
        ]}
      />
      {can("roles.create") && (
        <FormView
          title="Create a custom role"
          submitLabel="Create role"
          fields={[
            { name: "name", label: "Name", required: true },
            { name: "description", label: "Description" },
            {
              name: "capabilities",
              label: "Capabilities",
              type: "checkboxes",
              options: capabilities.map((c) => ({ value: c, label: c })),
            },
          ]}
          onSubmit={async (v) => {
            await api.roles.createRole({
              parent: uid,
              role: {
                name: v.name as string,
                description: v.description as string,
                capabilities: v.capabilities as string[],
              },
            });
            setReload(reload + 1);
          }}
        />
      )}
    </>
  );
}
