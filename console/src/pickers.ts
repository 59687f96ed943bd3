import { useEffect, useState } from "preact/hooks";
import { api } from "./api.js";

/** The root of a uid: its organization. */
export function orgOf(uid: string): string {
  return uid.split("/")[0] ?? uid;
}

/** Every group from the organization down to `uid`. */
export function ancestors(uid: string): string[] {
  const parts = uid.split("/");
  return parts.map((_, i) => parts.slice(0, i + 1).join("/"));
}

/** Every item of a list, following nextPageToken (pickers must offer everything). */
export async function all<T>(
  list: (pageToken: string) => Promise<{ items: T[]; nextPageToken?: string | undefined }>,
): Promise<T[]> {
  const out: T[] = [];
  let token = "";
  do {
    const page = await list(token);
    out.push(...page.items);
    token = page.nextPageToken ?? "";
  } while (token !== "");
  return out;
}

/** Whether a role can be bound at `uid`: a built-in one, or a custom role of it or above it. */
export function bindableAt(roleUid: string, uid: string): boolean {
  if (!roleUid.includes("/")) return true;
  const group = roleUid.slice(0, roleUid.lastIndexOf("/"));
  return uid === group || uid.startsWith(`${group}/`);
}

/** A picker option: a uid and the name shown for it. */
export interface Option {
  value: string;
  label: string;
}

/**
 * Options for pickers: the organization's workload identities and the people who hold a role
 * in it (the ones a binding can name), and the roles the caller may grant at `uid`: bindable
 * there (built in, or defined at or above it), and every capability of which the caller holds
 * there along with `role_bindings.create`, as the server's escalation rule asks.
 */
export function usePickers(uid: string, reload: number) {
  const [identities, setIdentities] = useState<Option[]>([]);
  const [roles, setRoles] = useState<Option[]>([]);
  useEffect(() => {
    const org = orgOf(uid);
    const uidp = { descendantsOf: org };
    Promise.all([
      all((pageToken) =>
        api.identities
          .listIdentities({ uidp, pageSize: 200, pageToken, orderBy: "name" })
          .then((r) => ({ items: r.identities, nextPageToken: r.nextPageToken })),
      ),
      all((pageToken) =>
        api.bindings
          .listRoleBindings({ uidp, pageSize: 200, pageToken })
          .then((r) => ({ items: r.roleBindings, nextPageToken: r.nextPageToken })),
      ),
    ])
      .then(([ids, bindings]) => {
        const seen = new Map<string, string>();
        for (const i of ids) seen.set(i.uid, i.name);
        for (const b of bindings) {
          if (b.identity && !seen.has(b.identity.uid))
            seen.set(b.identity.uid, `${b.identity.name} (person)`);
        }
        setIdentities(
          [...seen]
            .map(([value, label]) => ({ value, label }))
            .sort((a, b) => a.label.localeCompare(b.label)),
        );
      })
      .catch(() => undefined);
    Promise.all([
      all((pageToken) =>
        api.roles
          .listRoles({ pageSize: 200, pageToken, orderBy: "name" })
          .then((r) => ({ items: r.roles, nextPageToken: r.nextPageToken })),
      ),
      api.access.listCallerCapabilities({ groupUid: uid }),
    ])
      .then(([rs, mine]) => {
        const held = new Set(mine.capabilities);
        const grantable = (caps: readonly string[]) =>
          held.has("role_bindings.create") && caps.every((c) => held.has(c));
        setRoles(
          rs
            .filter((r) => bindableAt(r.uid, uid) && grantable(r.capabilities))
            .map((r) => ({ value: r.uid, label: r.name })),
        );
      })
      .catch(() => undefined);
  }, [uid, reload]);
  return { identities, roles };
}
