/**
 * The email domains an identity provider declares: DNS names, compared lowercase. A domain
 * claim is not verified ownership: it only chooses which provider the sign-in page offers
 * for an email address, and grants nothing.
 */

/** The most domains one provider declares. */
export const maxEmailDomains = 20;

/** The longest DNS name. */
export const maxDomainLength = 253;

// Labels of letters, digits and inner hyphens, 1-63 characters, at least two labels.
const label = "[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?";
const domainPattern = new RegExp(`^${label}(?:\\.${label})+$`);

/** Whether `domain` (already lowercase) is a DNS name with at least two labels. */
export function isEmailDomain(domain: string): boolean {
  return domain.length <= maxDomainLength && domainPattern.test(domain);
}

/** The domain of an email address, lowercase, or undefined when it has none. */
export function domainOfEmail(email: string): string | undefined {
  const at = email.lastIndexOf("@");
  if (at <= 0 || at === email.length - 1) return undefined;
  return email.slice(at + 1).toLowerCase();
}
