import { type DescMessage, isFieldSet, type MessageShape } from "@bufbuild/protobuf";
import type { FieldMask } from "@bufbuild/protobuf/wkt";
import { invalidField } from "../errors.js";

/** What an Update RPC may change, by proto field name. */
export interface MaskRules {
  /** Fields the caller may change. */
  mutable: readonly string[];
  /** Fields that are ignored when named (output only, the identifier). */
  ignored: readonly string[];
}

/**
 * Resolve an Update request's field mask into the set of fields to change (API.md "Update"):
 * no mask: the fields populated in `resource`; `*`: every mutable field (full replacement);
 * otherwise the named mutable fields. Output-only paths are ignored, unknown ones are
 * INVALID_ARGUMENT on `update_mask`.
 *
 * A mask with no paths counts as no mask. Over REST the gateway always sends a mask made of
 * the JSON keys of the body when the caller gave none (so `{"description": ""}` clears the
 * description); an empty one therefore comes from a body with no keys (`{}` or no body),
 * whose populated fields are only the uid from the path: the update changes nothing and
 * answers the resource as it is.
 */
export function resolveMask<Desc extends DescMessage>(
  schema: Desc,
  resource: MessageShape<Desc>,
  mask: FieldMask | undefined,
  rules: MaskRules,
): Set<string> {
  const paths = mask?.paths ?? [];
  if (paths.length === 0) {
    const present = new Set<string>();
    for (const name of rules.mutable) {
      const field = schema.fields.find((f) => f.name === name);
      if (field && isFieldSet(resource, field)) present.add(name);
    }
    return present;
  }
  if (paths.includes("*")) {
    if (paths.length > 1)
      throw invalidField("update_mask", "`*` cannot be combined with other paths");
    return new Set(rules.mutable);
  }
  const out = new Set<string>();
  for (const path of paths) {
    // A nested path (oidc.client_id) changes its top-level field as a whole.
    const top = path.split(".")[0] ?? "";
    if (rules.mutable.includes(top)) out.add(top);
    else if (!rules.ignored.includes(top)) {
      throw invalidField("update_mask", `unknown field path ${JSON.stringify(path)}`);
    }
  }
  return out;
}
