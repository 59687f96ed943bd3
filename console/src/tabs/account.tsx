import { useEffect, useState } from "preact/hooks";
import type { AccountAssociation } from "../../../gen/gatehouse/iam/v2beta1/account_associations_pb.js";
import { api, type Problem, problemOf } from "../api.js";
import type { Can } from "../caps.js";
import { ConfirmButton, FormView, ProblemBox } from "../components.js";

/** A group's account association (one per group). */
export function AccountTab({ uid, can }: { uid: string; can: Can }) {
  const [account, setAccount] = useState<AccountAssociation | null | undefined>();
  const [problem, setProblem] = useState<Problem | undefined>();
  const [version, setVersion] = useState(0);
  useEffect(() => {
    api.accounts
      .getAccountAssociation({ uid })
      .then(setAccount)
      .catch((err) => {
        const p = problemOf(err);
        if (p.code === "NotFound") setAccount(null);
        else setProblem(p);
      });
  }, [uid, version]);
  return (
    <>
      <h2>Account association</h2>
      <ProblemBox problem={problem} />
      {account ? (
        <section aria-label="Associated accounts">
          <dl>
            <dt>Name</dt>
            <dd>{account.name}</dd>
            <dt>Amazon account</dt>
            <dd>{account.amazon?.account ?? "—"}</dd>
            <dt>Google project</dt>
            <dd>
              {account.google
                ? `${account.google.projectId} (${account.google.projectNumber})`
                : "—"}
            </dd>
            <dt>Azure tenant</dt>
            <dd>
              {account.azure
                ? `${account.azure.tenantId}: ${account.azure.clientIds.join(", ")}`
                : "—"}
            </dd>
            <dt>GitHub installations</dt>
            <dd>{account.github?.installationIds.join(", ") || "—"}</dd>
          </dl>
          {can("account_associations.delete") && (
            <ConfirmButton
              label="Remove association"
              confirm="Remove this group's account association?"
              action={async () => {
                await api.accounts.deleteAccountAssociation({ uid });
                setVersion(version + 1);
              }}
            />
          )}
        </section>
      ) : account === null && can("account_associations.create") ? (
        <FormView
          title="Associate accounts"
          submitLabel="Associate"
          fields={[
            { name: "name", label: "Name" },
            { name: "account", label: "Amazon account (12 digits)" },
            { name: "projectId", label: "Google project ID" },
            { name: "projectNumber", label: "Google project number" },
            { name: "tenantId", label: "Azure tenant ID (a UUID)" },
            { name: "clientIds", label: "Azure client IDs (comma-separated UUIDs)" },
            { name: "installationIds", label: "GitHub installation IDs (comma-separated)" },
          ]}
          onSubmit={async (v) => {
            const list = (s: string) =>
              s
                .split(",")
                .map((x) => x.trim())
                .filter((x) => x !== "");
            const ids = list(v.installationIds as string);
            const clientIds = list(v.clientIds as string);
            if (ids.some((i) => !/^\d{1,19}$/.test(i))) {
              throw new Error("GitHub installation IDs are numbers, separated by commas");
            }
            await api.accounts.createAccountAssociation({
              parent: uid,
              accountAssociation: {
                name: v.name as string,
                ...(v.account ? { amazon: { account: v.account as string } } : {}),
                ...(v.projectId || v.projectNumber
                  ? {
                      google: {
                        projectId: v.projectId as string,
                        projectNumber: v.projectNumber as string,
                      },
                    }
                  : {}),
                ...(v.tenantId || clientIds.length > 0
                  ? { azure: { tenantId: (v.tenantId as string).trim(), clientIds } }
                  : {}),
                ...(ids.length > 0
                  ? { github: { installationIds: ids.map((i) => BigInt(i)) } }
                  : {}),
              },
            });
            setVersion(version + 1);
          }}
        />
      ) : account === null ? (
        <p>No accounts are associated with this group.</p>
      ) : (
        <p>Loading…</p>
      )}
    </>
  );
}
