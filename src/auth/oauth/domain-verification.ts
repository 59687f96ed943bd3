import type { Store } from "../../store/store.js";

/** The DNS name whose TXT records verify claims of `domain`. */
export function verificationName(domain: string): string {
  return `_gatehouse-verification.${domain}`;
}

/** The TXT record that verifies the claim of a domain by the provider `providerUid`. */
export function verificationRecord(providerUid: string): string {
  return `gatehouse-identity-provider=${providerUid}`;
}

/** How long an unverified claim waits before its DNS is looked at again. */
export const domainRecheckMs = 10 * 60_000;

/** Claims looked at in one run: a bounded number of DNS queries each interval. */
const claimsPerRun = 100;

/** What the verification needs. */
export interface DomainVerificationDeps {
  store: Pick<Store, "domainClaimsToCheck" | "recordDomainCheck">;
  /** The TXT records of a name, each as its strings (node:dns's resolveTxt; tests inject). */
  resolveTxt: (name: string) => Promise<string[][]>;
  now: () => number;
  /** Told what was verified: domains and provider uids. */
  log: (fields: Record<string, unknown>, msg: string) => void;
}

/** The DNS verification of identity providers' domain claims. */
export interface DomainVerificationJob {
  /** Check the claims due, at the clock's now: how many were checked and verified. */
  run(): Promise<{ checked: number; verified: number }>;
}

/**
 * Create the DNS verification of domain claims: a provider's claim of `example.com` is
 * verified once `_gatehouse-verification.example.com` has a TXT record
 * `gatehouse-identity-provider=<provider uid>`, which only whoever runs the domain's DNS can
 * publish. Each run looks at up to 100 unverified claims not looked at for domainRecheckMs;
 * a failed lookup leaves the claim unverified until its next turn. A verified claim stays
 * verified while its provider declares the domain (dropped and declared again, it is a new,
 * unverified claim).
 */
export function createDomainVerification(deps: DomainVerificationDeps): DomainVerificationJob {
  const { store, now, log } = deps;
  return {
    async run() {
      const t = now();
      const due = await store.domainClaimsToCheck(t - domainRecheckMs, claimsPerRun);
      let verified = 0;
      for (const { domain, providerUid } of due) {
        let records: string[][] = [];
        try {
          records = await deps.resolveTxt(verificationName(domain));
        } catch {
          // No such name, no record, or DNS unreachable: unverified until the next turn.
        }
        // A TXT record's strings are one value split in 255-byte pieces.
        const ok = records.some((r) => r.join("") === verificationRecord(providerUid));
        await store.recordDomainCheck(domain, providerUid, now(), ok);
        if (ok) {
          verified++;
          log({ domain, provider: providerUid }, "email domain claim verified");
        }
      }
      return { checked: due.length, verified };
    },
  };
}
