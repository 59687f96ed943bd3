/**
 * Fold an email address's case the one way Gatehouse compares addresses: ASCII letters only.
 * Unicode case folding would let look-alikes through: the Kelvin sign (U+212A) lowercases
 * to "k", so "\u212Aate@example.com" would pass as "kate@example.com".
 */
export function foldEmail(email: string): string {
  return email.replace(/[A-Z]/g, (c) => String.fromCharCode(c.charCodeAt(0) | 0x20));
}

/** Whether two email addresses are the same, ASCII case aside (see foldEmail). */
export function sameEmail(a: string, b: string): boolean {
  return foldEmail(a) === foldEmail(b);
}
