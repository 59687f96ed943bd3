import { randomInt } from "node:crypto";

/**
 * The letters of a user code: consonants only (RFC 8628 6.1's example), so a code never
 * spells a word, has no vowel to mistake for a digit (O, 0, I, 1) and reads aloud plainly.
 */
const alphabet = "BCDFGHJKLMNPQRSTVWXZ";
/** Eight letters: 20^8, about 2.6e10 codes (34 bits), typed as two groups of four. */
const length = 8;

/** A new user code, `XXXX-XXXX`. */
export function newUserCode(): string {
  let code = "";
  for (let i = 0; i < length; i++) code += alphabet[randomInt(alphabet.length)];
  return `${code.slice(0, 4)}-${code.slice(4)}`;
}

/**
 * A user code as a person typed it, in the form it was issued in (`XXXX-XXXX`), or undefined
 * if it cannot be one: case, spaces and dashes are forgiven (RFC 8628 6.1), any other
 * character is not.
 */
export function normalizeUserCode(typed: string): string | undefined {
  if (typed.length > 64) return undefined;
  const letters = typed.toUpperCase().replace(/[\s-]/g, "");
  if (letters.length !== length) return undefined;
  for (const c of letters) if (!alphabet.includes(c)) return undefined;
  return `${letters.slice(0, 4)}-${letters.slice(4)}`;
}
