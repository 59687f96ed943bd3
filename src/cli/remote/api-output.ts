import {
  type DescField,
  type DescMessage,
  getOption,
  type Message,
  type MessageShape,
  toJson,
} from "@bufbuild/protobuf";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import { Code, type ConnectError } from "@connectrpc/connect";
import { FieldBehavior, field_behavior } from "../../../gen/google/api/field_behavior_pb.js";
import {
  BadRequestSchema,
  ErrorInfoSchema,
  PreconditionFailureSchema,
} from "../../../gen/google/rpc/error_details_pb.js";
import type { CliIo } from "../cli-io.js";

/** How a command prints what it got: `jsonl` is a list's items, one JSON line each. */
export type OutputFormat = "table" | "json" | "jsonl";

/** Print one message as JSON (proto3 JSON, the REST API's own form). */
export function printJson<D extends DescMessage>(
  io: CliIo,
  desc: D,
  msg: MessageShape<D>,
  opts: { alwaysEmitImplicit?: boolean } = {},
): void {
  io.out(`${JSON.stringify(toJson(desc, msg, opts), null, 2)}\n`);
}

/** Print one message as one line of JSON (JSON Lines: a list's items, streamed). */
export function printJsonLine<D extends DescMessage>(
  io: CliIo,
  desc: D,
  msg: MessageShape<D>,
): void {
  io.out(`${JSON.stringify(toJson(desc, msg))}\n`);
}

/**
 * Print messages as a table: uid and name first, then the other single-valued fields, and the
 * name of each hydrated reference (`role.name`). Descriptions and long lists are left to JSON.
 */
export function printTable<D extends DescMessage>(
  io: CliIo,
  desc: D,
  rows: readonly MessageShape<D>[],
): void {
  const columns = tableColumns(desc);
  const cells = rows.map((row) => columns.map((c) => c.read(row as Message)));
  const widths = columns.map((c, i) =>
    Math.max(c.title.length, ...cells.map((r) => (r[i] ?? "").length)),
  );
  const line = (values: string[]) =>
    `${values
      .map((v, i) => v.padEnd(widths[i] ?? 0))
      .join("  ")
      .trimEnd()}\n`;
  io.out(line(columns.map((c) => c.title.toUpperCase())));
  for (const r of cells) io.out(line(r));
}

interface Column {
  title: string;
  read(row: Message): string;
}

function tableColumns(desc: DescMessage): Column[] {
  const out: Column[] = [];
  const order = (f: DescField) => (f.name === "uid" ? 0 : f.name === "name" ? 1 : 2);
  for (const f of [...desc.fields].sort((a, b) => order(a) - order(b))) {
    if (f.name === "description" || f.name === "etag") continue;
    // Input-only fields are never answered: a column of them would always be empty.
    if (getOption(f, field_behavior).includes(FieldBehavior.INPUT_ONLY)) continue;
    if (f.fieldKind === "scalar" || f.fieldKind === "enum") {
      out.push({
        title: f.name,
        read: (row) => show(f, (row as Record<string, unknown>)[f.localName]),
      });
    } else if (f.fieldKind === "message" && f.message.typeName === "google.protobuf.Timestamp") {
      out.push({
        title: f.name,
        read: (row) => {
          const t = (row as Record<string, unknown>)[f.localName];
          return t ? timestampDate(t as never).toISOString() : "";
        },
      });
    } else if (f.fieldKind === "message" && f.message.fields.some((g) => g.name === "name")) {
      out.push({
        title: `${f.name}.name`,
        read: (row) => {
          const ref = (row as Record<string, unknown>)[f.localName] as
            | { name?: string }
            | undefined;
          return ref?.name ?? "";
        },
      });
    }
  }
  return out.slice(0, 7);
}

function show(f: DescField, v: unknown): string {
  if (f.fieldKind === "enum") return f.enum.values.find((e) => e.number === v)?.name ?? String(v);
  if (v === undefined || v === null) return "";
  return String(v).replace(/\s+/g, " ");
}

/**
 * Print an API error as the person needs it: the status message, then each field violation
 * (`field: description`) or precondition, from the google.rpc.Status details.
 */
export function printApiError(io: CliIo, err: ConnectError): void {
  io.err(`error: ${Code[err.code] ?? err.code}: ${err.rawMessage}\n`);
  for (const bad of err.findDetails(BadRequestSchema)) {
    for (const v of bad.fieldViolations) io.err(`  ${v.field}: ${v.description}\n`);
  }
  for (const pre of err.findDetails(PreconditionFailureSchema)) {
    for (const v of pre.violations) io.err(`  ${v.type} ${v.subject}: ${v.description}\n`);
  }
  for (const info of err.findDetails(ErrorInfoSchema)) {
    if (
      info.reason &&
      info.reason !== Code[err.code]?.replace(/([a-z])([A-Z])/g, "$1_$2").toUpperCase()
    ) {
      io.err(`  reason: ${info.reason}\n`);
    }
  }
}
