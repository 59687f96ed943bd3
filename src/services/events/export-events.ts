import { timestampMs } from "@bufbuild/protobuf/wkt";
import type { HandlerContext } from "@connectrpc/connect";
import type {
  Event,
  ExportEventsRequest,
} from "../../../gen/gatehouse/events/v2beta1/events_pb.js";
import type { ListEngine } from "../../list/list.js";
import type { EventFilters } from "../../store/event-store.js";
import type { Store } from "../../store/store.js";
import type { Cursor } from "../../store/vocabulary.js";
import { violations } from "../../validation/field-rules.js";
import { listOptionsOf } from "../caller.js";
import { eventFiltersOf, toEvent } from "./event-filters.js";

/** What an export needs. */
export interface ExportDeps {
  store: Store;
  lists: ListEngine;
  now: () => number;
}

/** The longest time range one export covers: a SIEM's export runs daily or hourly. */
export const maxExportRangeMs = 31 * 24 * 3_600_000;
/** Events read from the store at a time: the most an export holds in memory. */
export const exportPageSize = 500;

/**
 * Create ExportEvents: every event of a time range, oldest first, streamed page by page from
 * the store (a cursor on time and uid, never the whole range in memory). The same filters and
 * the same scope as ListEvents (the access interceptor's list scope: the organizations where
 * the caller holds events.list). The request is checked before the stream starts, so that a
 * bad one is refused as a call is (INVALID_ARGUMENT), not part-way through an answer.
 */
export function createExportEvents(deps: ExportDeps) {
  const { store, lists, now } = deps;
  return (req: ExportEventsRequest, ctx: HandlerContext): AsyncIterable<Event> => {
    const v = violations();
    const filters: EventFilters = eventFiltersOf(v, req);
    // A stream's request passes no NUL gate (it reads unary messages): refused here.
    if (req.actor.includes("\u0000")) v.add("actor", "may not contain the NUL character");
    if (!req.startTime) v.add("start_time", "is required: the export's range starts there");
    const since = req.startTime ? timestampMs(req.startTime) : 0;
    const before = req.endTime ? timestampMs(req.endTime) : now();
    if (req.startTime && before <= since) {
      v.add("end_time", req.endTime ? "must be after start_time" : "start_time is in the future");
    } else if (req.startTime && before - since > maxExportRangeMs) {
      v.add("end_time", "at most 31 days after start_time: export a longer range in parts");
    }
    filters.since = since;
    filters.before = before;
    v.throwIfAny();
    const first = lists.parse(
      { uidp: req.uidp, name: "", pageSize: 0, pageToken: "", orderBy: "create_time", skip: 0 },
      filters,
      listOptionsOf(ctx),
    );
    return (async function* () {
      let after: Cursor | undefined;
      for (;;) {
        const page = await store.listEvents({
          ...first,
          ...(after ? { after } : {}),
          limit: exportPageSize,
        });
        for (const r of page.items) yield toEvent(r);
        const last = page.items.at(-1);
        // Gone (cancelled, or the server stopping): no more pages for nobody.
        if (!page.hasMore || !last || ctx.signal.aborted) return;
        after = { value: last.time, uid: last.uid };
      }
    })();
  };
}
