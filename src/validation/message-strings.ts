import type { DescMessage, Message } from "@bufbuild/protobuf";
import { reflect } from "@bufbuild/protobuf/reflect";

/**
 * Call `visit` with every string of a message, nested messages included: string fields,
 * string list items, and the keys and string values of maps, each with its path in JSON
 * names (`identity.claimMatch.claims[name]`, `... (key)` for a map key). The checks that
 * hold for every string input on every path (src/validation/string-rules.ts) walk requests with it.
 */
export function forEachString(
  schema: DescMessage,
  message: Message,
  visit: (path: string, value: string) => void,
  prefix = "",
): void {
  const r = reflect(schema, message);
  for (const field of r.fields) {
    if (!r.isSet(field)) continue;
    const path = prefix ? `${prefix}.${field.jsonName}` : field.jsonName;
    switch (field.fieldKind) {
      case "scalar": {
        const v = r.get(field);
        if (typeof v === "string") visit(path, v);
        break;
      }
      case "list": {
        const list = r.get(field);
        let i = 0;
        for (const item of list) {
          const at = `${path}[${i++}]`;
          if (typeof item === "string") visit(at, item);
          else if (field.listKind === "message" && item) {
            const m = item as { message: Message; desc: DescMessage };
            forEachString(m.desc, m.message, visit, at);
          }
        }
        break;
      }
      case "map": {
        for (const [key, value] of r.get(field)) {
          const at = `${path}[${String(key)}]`;
          if (typeof key === "string") visit(`${at} (key)`, key);
          if (typeof value === "string") visit(at, value);
          else if (field.mapKind === "message" && value) {
            const m = value as { message: Message; desc: DescMessage };
            forEachString(m.desc, m.message, visit, at);
          }
        }
        break;
      }
      case "message": {
        const m = r.get(field);
        forEachString(m.desc, m.message, visit, path);
        break;
      }
      default:
        break;
    }
  }
}
