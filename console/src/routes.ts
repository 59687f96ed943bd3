/** A link to a group's page (`#/group/<uid>/<tab>`). */
export function groupHref(uid: string, tab = "subgroups"): string {
  return `#/group/${encodeURIComponent(uid)}/${tab}`;
}
