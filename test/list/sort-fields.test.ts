import { describe, expect, it } from "vitest";
import { SubscriptionSchema } from "../../gen/gatehouse/events/v2beta1/events_pb.js";
import { GroupInviteSchema } from "../../gen/gatehouse/iam/v2beta1/group_invites_pb.js";
import { GroupSchema } from "../../gen/gatehouse/iam/v2beta1/groups_pb.js";
import { IdentitySchema } from "../../gen/gatehouse/iam/v2beta1/identities_pb.js";
import { RoleBindingSchema } from "../../gen/gatehouse/iam/v2beta1/role_bindings_pb.js";
import { AdvisorySchema } from "../../gen/gatehouse/vulnerabilities/v2beta1/advisories_pb.js";
import { parseOrderBy } from "../../src/list/list.js";
import { sortFieldsOf } from "../../src/list/sort-fields.js";
import { advisories } from "../../src/store/rows/advisory-rows.js";
import { groupInvites } from "../../src/store/rows/group-invite-rows.js";
import { groups } from "../../src/store/rows/group-rows.js";
import { identities } from "../../src/store/rows/identity-rows.js";
import { roleBindings } from "../../src/store/rows/role-binding-rows.js";
import { subscriptions } from "../../src/store/rows/subscription-rows.js";

// The sortable fields derive from each message and its storage declaration: its scalars,
// enums and timestamps kept in a column of their own, less the columns declared unsortable.

describe("sortFieldsOf", () => {
  it.each([
    ["groups", sortFieldsOf(GroupSchema, groups.listColumns), ["description", "verified"]],
    [
      "advisories",
      sortFieldsOf(AdvisorySchema, advisories.listColumns),
      [
        "advisory_id",
        "summary",
        "artifact_name",
        "component_name",
        "component_type",
        "latest_event_type",
      ],
    ],
    [
      "identities",
      sortFieldsOf(IdentitySchema, identities.listColumns),
      ["description", "last_seen_time"],
    ],
    [
      "role bindings",
      sortFieldsOf(RoleBindingSchema, roleBindings.listColumns),
      // identity_uid and team_uid: each NULL for the other kind of binding.
      ["role_uid"],
    ],
  ])("%s: the common fields, then the message's own", (_name, sort, own) => {
    expect(sort.names).toEqual(["name", "create_time", "update_time", "uid", ...own]);
  });

  it("leaves out secrets and what not every reader is shown, and lists, maps and messages", () => {
    const refused: [ReturnType<typeof sortFieldsOf>, string][] = [
      [sortFieldsOf(SubscriptionSchema, subscriptions.listColumns), "secret"],
      [sortFieldsOf(SubscriptionSchema, subscriptions.listColumns), "event_types"],
      [sortFieldsOf(GroupInviteSchema, groupInvites.listColumns), "code"],
      [sortFieldsOf(GroupInviteSchema, groupInvites.listColumns), "role"],
      [sortFieldsOf(IdentitySchema, identities.listColumns), "email"],
      [sortFieldsOf(GroupSchema, groups.listColumns), "resource_limits"],
    ];
    for (const [sort, field] of refused) {
      expect(sort.names, field).not.toContain(field);
      expect(parseOrderBy(field, sort), field).toBeUndefined();
    }
  });

  it("takes proto and JSON names, either direction, and the older aliases", () => {
    const sort = sortFieldsOf(AdvisorySchema, advisories.listColumns);
    expect(parseOrderBy("advisoryId DESC", sort)).toEqual({ field: "advisory_id", desc: true });
    expect(parseOrderBy(" latest_event_type  asc ", sort)).toEqual({
      field: "latest_event_type",
      desc: false,
    });
    expect(parseOrderBy("created_at", sort)).toEqual({ field: "create_time", desc: false });
    // Without a resource, only the common fields.
    expect(parseOrderBy("advisory_id")).toBeUndefined();
  });
});
