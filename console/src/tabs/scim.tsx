import { Code, ConnectError } from "@connectrpc/connect";
import { useEffect, useState } from "preact/hooks";
import type { ScimConnection } from "../../../gen/gatehouse/iam/v2beta1/scim_pb.js";
import { api, type Problem, problemOf } from "../api.js";
import { ConfirmButton, CopyText, ProblemBox, time } from "../components.js";

/**
 * The page on connecting Okta, Entra ID and Google Workspace: docs/scim.md of the repository,
 * the same page the SCIM endpoint's ServiceProviderConfig names as its documentationUri.
 */
export const scimDocsUrl = "https://github.com/gatehouse/gatehouse/blob/main/docs/scim.md";

/**
 * The organization's SCIM connection (offered to owners: identity_providers.update at the
 * organization): whether there is one, its base URL, and its token created, rotated or
 * revoked. A new token lives in this component's state only: shown once, never stored, gone
 * with "Done", a reload or leaving the page (the server keeps only its hash).
 */
export function ScimTab({ uid }: { uid: string }) {
  // undefined: loading; null: no connection.
  const [connection, setConnection] = useState<ScimConnection | null | undefined>();
  const [token, setToken] = useState<string | undefined>();
  const [problem, setProblem] = useState<Problem | undefined>();
  const [version, setVersion] = useState(0);
  useEffect(() => {
    api.scim
      .getScimConnection({ org: uid })
      .then((c) => setConnection(c))
      .catch((err) => {
        if (ConnectError.from(err).code === Code.NotFound) setConnection(null);
        else setProblem(problemOf(err));
      });
  }, [uid, version]);
  const createToken = async () => {
    const made = await api.scim.createScimToken({ org: uid });
    setToken(made.token);
    setConnection(made.connection ?? null);
  };
  return (
    <>
      <h2>SCIM provisioning</h2>
      <p>
        Your directory (Okta, Microsoft Entra ID, or a tool that reads Google Workspace) creates,
        updates, groups and deprovisions this organization's people over SCIM 2.0, with a bearer
        token of this connection. How to set it up in each:{" "}
        <a href={scimDocsUrl} target="_blank" rel="noreferrer">
          connecting Okta, Entra ID and Google Workspace (docs/scim.md)
        </a>
        .
      </p>
      <ProblemBox problem={problem} />
      {token && connection && (
        <section class="once" aria-label="New SCIM token">
          <p>
            The token, shown this once (Gatehouse keeps only its hash; a reload will not show it
            again): <CopyText text={token} label="Copy token" />
          </p>
          <p>Paste it into your directory now, with the base URL below.</p>
          <button type="button" onClick={() => setToken(undefined)}>
            Done
          </button>
        </section>
      )}
      {connection === undefined && !problem && <p>Loading…</p>}
      {connection === null && (
        <section aria-label="No SCIM connection">
          <p id="scim-state">This organization has no SCIM connection.</p>
          <button
            type="button"
            onClick={() => createToken().catch((e) => setProblem(problemOf(e)))}
          >
            Create SCIM connection
          </button>
        </section>
      )}
      {connection && (
        <section aria-label="SCIM connection">
          <p id="scim-state">This organization has a SCIM connection.</p>
          <dl>
            <dt>Base URL</dt>
            <dd>
              <CopyText text={connection.baseUrl} label="Copy base URL" />
            </dd>
            <dt>Token created</dt>
            <dd>
              {time(connection.createTime)} by <span class="uid">{connection.creatorUid}</span>
            </dd>
            <dt>Last used by the directory</dt>
            <dd>{time(connection.useTime)}</dd>
          </dl>
          <ConfirmButton
            label="Rotate token"
            confirm="Make a new SCIM token? The current one stops working at once: the directory gets 401 until it has the new one."
            action={createToken}
          />{" "}
          <ConfirmButton
            label="Revoke token"
            confirm="Revoke the SCIM token? The directory can no longer provision anyone; the people and teams it provisioned stay."
            action={async () => {
              await api.scim.deleteScimToken({ org: uid });
              setToken(undefined);
              setVersion(version + 1);
            }}
          />
          <h3>What to paste into your directory</h3>
          <table aria-label="Directory settings">
            <thead>
              <tr>
                <th scope="col">Directory</th>
                <th scope="col">Setting</th>
                <th scope="col">Value</th>
              </tr>
            </thead>
            <tbody>
              <tr>
                <td>Okta</td>
                <td>SCIM connector base URL</td>
                <td>the base URL</td>
              </tr>
              <tr>
                <td>Okta</td>
                <td>Unique identifier field for users</td>
                <td>
                  <code>userName</code>
                </td>
              </tr>
              <tr>
                <td>Okta</td>
                <td>Authentication Mode: HTTP Header, Authorization</td>
                <td>the token (Okta adds "Bearer")</td>
              </tr>
              <tr>
                <td>Microsoft Entra ID</td>
                <td>Provisioning Mode: Automatic; Admin Credentials, Tenant URL</td>
                <td>the base URL</td>
              </tr>
              <tr>
                <td>Microsoft Entra ID</td>
                <td>Admin Credentials, Secret Token</td>
                <td>the token</td>
              </tr>
            </tbody>
          </table>
        </section>
      )}
    </>
  );
}
