import { invalidField } from "../errors.js";

/** Whether a Content-Type is `application/x-www-form-urlencoded` (any case, any parameters). */
export function isFormContentType(type: string | undefined): boolean {
  return type?.split(";", 1)[0]?.trim().toLowerCase() === "application/x-www-form-urlencoded";
}

/**
 * Turn an `application/x-www-form-urlencoded` body into the JSON text of the flat request
 * message it names (OAuth-style token endpoints are posted forms): each key a top-level field,
 * its value a string. A key given twice is INVALID_ARGUMENT rather than a silent choice.
 */
export function formBodyToJson(text: string): string {
  const out: Record<string, string> = {};
  for (const [key, value] of new URLSearchParams(text)) {
    if (Object.hasOwn(out, key)) throw invalidField(key, "is given more than once");
    out[key] = value;
  }
  return JSON.stringify(out);
}
