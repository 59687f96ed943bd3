import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { eventTypeOf, isMutating } from "../../src/events/audit-interceptor.js";
import { currentEventType, legacyEventTypes } from "../../src/events/legacy-types.js";
import { serviceEntries } from "../../src/service-table.js";

/** The event types docs/events.md names: those recorded today. */
const documented = new Set(
  readFileSync(new URL("../../docs/events.md", import.meta.url), "utf8").match(
    /dev\.gatehouse\.[a-z0-9_]+\.[a-z0-9_]+\.[a-z0-9_]+\.v[0-9]+/g,
  ),
);

// v1 RPCs added after one type per change: never recorded under a type of their own (v1
// RequestGroupAccess records its v2 twin's access_request.created), so no old type to keep.
const bornAfter = new Set(["GroupsService/RequestGroupAccess"]);

describe("legacy event types", () => {
  // The type a v1 RPC was recorded under before one type per change was derived from its v1
  // descriptor as eventTypeOf still derives it: each must lead to a type recorded today, so a
  // subscription naming it keeps its meaning.
  it.each(
    serviceEntries
      .filter((e) => e.adapter)
      .flatMap((e) => e.service.methods.filter(isMutating).map((m) => [e.service, m] as const))
      .map(([service, method]) => [`${service.name}/${method.name}`, service, method] as const)
      .filter(([name]) => !bornAfter.has(name)),
  )("%s's old type leads to a type recorded today", (_name, service, method) => {
    expect(documented).toContain(currentEventType(eventTypeOf(service, method)));
  });

  it("maps only to types recorded today, never to another legacy type", () => {
    for (const [old, now] of Object.entries(legacyEventTypes)) {
      expect(documented, old).toContain(now);
      expect(legacyEventTypes[now], now).toBeUndefined();
    }
  });
});
