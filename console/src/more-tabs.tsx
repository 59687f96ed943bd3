import { useEffect, useState } from "preact/hooks";
import type { AccountAssociation } from "../../gen/gatehouse/iam/v2beta1/account_associations_pb.js";
import { GroupInvite_State } from "../../gen/gatehouse/iam/v2beta1/group_invites_pb.js";
import type { Repo } from "../../gen/gatehouse/registry/v2beta1/repos_pb.js";
import {
  type Advisory,
  EventType,
} from "../../gen/gatehouse/vulnerabilities/v2beta1/advisories_pb.js";
import { api, type Problem, problemOf } from "./api.js";
import { ConfirmButton, FormView, ListView, ProblemBox, time } from "./components.js";
import { usePickers } from "./group-page.js";

export function InvitesTab({ uid }: { uid: string }) {
  const [reload, setReload] = useState(0);
  const [code, setCode] = useState<string | undefined>();
  const { roles } = usePickers(uid, 0);
  return (
    <>
      <h2>Invites</h2>
      {code && (
        <section class="once" aria-label="New invite code">
          <p>
            The invite's code, shown this once (Gatehouse keeps only its hash):{" "}
            <code id="invite-code">{code}</code>{" "}
            <button type="button" onClick={() => navigator.clipboard?.writeText(code)}>
              Copy code
            </button>
          </p>
          <p>
            Redeem it with <code>gatehouse iam invites redeem {code}</code>, or in this console's
            home page.
          </p>
          <button type="button" onClick={() => setCode(undefined)}>
            Done
          </button>
        </section>
      )}
      <ListView
        label="Invites"
        nameLabel="Role name"
        reload={reload}
        load={async (q) => {
          const r = await api.invites.listGroupInvites({ uidp: { childrenOf: uid }, ...q });
          return {
            items: r.groupInvites,
            nextPageToken: r.nextPageToken,
            totalCount: r.totalCount,
          };
        }}
        columns={[
          { title: "Role", render: (i) => i.role?.name ?? i.roleUid },
          { title: "Email", render: (i) => i.email || "anyone with the code" },
          { title: "Expires", render: (i) => time(i.expirationTime) },
          { title: "Single use", render: (i) => (i.singleUse ? "yes" : "no") },
          { title: "State", render: (i) => GroupInvite_State[i.state] ?? "" },
          {
            title: "Delete",
            render: (i) => (
              <ConfirmButton
                label="Delete"
                confirm="Delete this invite?"
                action={async () => {
                  await api.invites.deleteGroupInvite({ uid: i.uid });
                  setReload(reload + 1);
                }}
              />
            ),
          },
        ]}
      />
      <FormView
        title="Create an invite"
        submitLabel="Create invite"
        fields={[
          { name: "roleUid", label: "Role", type: "select", options: roles },
          { name: "email", label: "Only for this verified email (optional)" },
          { name: "ttl", label: "Valid for (seconds, default 7 days)" },
          { name: "singleUse", label: "Single use", type: "checkbox" },
        ]}
        onSubmit={async (v) => {
          const seconds = (v.ttl as string).trim();
          const invite = await api.invites.createGroupInvite({
            parent: uid,
            groupInvite: {
              roleUid: v.roleUid as string,
              email: v.email as string,
              singleUse: v.singleUse === "true",
              ...(seconds === "" ? {} : { ttl: { seconds: BigInt(Number(seconds) || 0) } }),
            },
          });
          setCode(invite.code);
          setReload(reload + 1);
        }}
      />
    </>
  );
}

export function ProvidersTab({ uid }: { uid: string }) {
  const [reload, setReload] = useState(0);
  const { roles } = usePickers(uid, 0);
  return (
    <>
      <h2>Identity providers</h2>
      <p>
        People sign in through an organization's provider with{" "}
        <code>gatehouse auth login --identity-provider &lt;uid&gt;</code> and get its default role
        here.
      </p>
      <ListView
        label="Identity providers"
        reload={reload}
        load={async (q) => {
          const r = await api.providers.listIdentityProviders({ uidp: { childrenOf: uid }, ...q });
          return {
            items: r.identityProviders,
            nextPageToken: r.nextPageToken,
            totalCount: r.totalCount,
          };
        }}
        columns={[
          { title: "Name", render: (p) => p.name },
          { title: "Issuer", render: (p) => p.oidc?.issuer ?? "" },
          { title: "Client ID", render: (p) => p.oidc?.clientId ?? "" },
          {
            title: "Redirect URI (register it at the provider)",
            render: (p) => <span class="uid">{p.redirectUri}</span>,
          },
          { title: "Uid", render: (p) => <span class="uid">{p.uid}</span> },
          {
            title: "Delete",
            render: (p) => (
              <ConfirmButton
                label="Delete"
                confirm={`Delete the provider ${p.name}?`}
                action={async () => {
                  await api.providers.deleteIdentityProvider({ uid: p.uid });
                  setReload(reload + 1);
                }}
              />
            ),
          },
        ]}
      />
      <FormView
        title="Add an identity provider"
        submitLabel="Add provider"
        fields={[
          { name: "name", label: "Name", required: true },
          { name: "issuer", label: "Issuer (https URL)", required: true },
          { name: "clientId", label: "Client ID", required: true },
          { name: "clientSecret", label: "Client secret (never shown again)", type: "password" },
          { name: "defaultRole", label: "Default role", type: "select", options: roles },
        ]}
        onSubmit={async (v) => {
          await api.providers.createIdentityProvider({
            parent: uid,
            identityProvider: {
              name: v.name as string,
              defaultRole: v.defaultRole as string,
              oidc: {
                issuer: v.issuer as string,
                clientId: v.clientId as string,
                clientSecret: v.clientSecret as string,
              },
            },
          });
          setReload(reload + 1);
        }}
      />
    </>
  );
}

export function AccountTab({ uid }: { uid: string }) {
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
          <ConfirmButton
            label="Remove association"
            confirm="Remove this group's account association?"
            action={async () => {
              await api.accounts.deleteAccountAssociation({ uid });
              setVersion(version + 1);
            }}
          />
        </section>
      ) : account === null ? (
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
      ) : (
        <p>Loading…</p>
      )}
    </>
  );
}

export function ReposTab({ uid }: { uid: string }) {
  const [reload, setReload] = useState(0);
  const [repo, setRepo] = useState<Repo | undefined>();
  return (
    <>
      <h2>Repos</h2>
      <ListView<Repo>
        label="Repos"
        reload={reload}
        load={async (q) => {
          const r = await api.repos.listRepos({ uidp: { childrenOf: uid }, ...q });
          return { items: r.repos, nextPageToken: r.nextPageToken, totalCount: r.totalCount };
        }}
        columns={[
          {
            title: "Name",
            render: (r) => (
              <button type="button" class="link" onClick={() => setRepo(r)}>
                {r.name}
              </button>
            ),
          },
          { title: "Description", render: (r) => r.description },
          {
            title: "Delete",
            render: (r) => (
              <ConfirmButton
                label="Delete"
                confirm={`Delete the repo ${r.name}?`}
                action={async () => {
                  await api.repos.deleteRepo({ uid: r.uid });
                  setRepo(undefined);
                  setReload(reload + 1);
                }}
              />
            ),
          },
        ]}
      />
      <FormView
        title="Create a repo"
        submitLabel="Create repo"
        fields={[
          { name: "name", label: "Name", required: true },
          { name: "description", label: "Description" },
        ]}
        onSubmit={async (v) => {
          await api.repos.createRepo({
            parent: uid,
            repo: { name: v.name as string, description: v.description as string },
          });
          setReload(reload + 1);
        }}
      />
      {repo && <TagsOf repo={repo} />}
    </>
  );
}

function TagsOf({ repo }: { repo: Repo }) {
  const [reload, setReload] = useState(0);
  return (
    <section class="detail" aria-label={`Tags of ${repo.name}`}>
      <h3>Tags of {repo.name}</h3>
      <ListView
        key={repo.uid}
        label={`Tags of ${repo.name}`}
        reload={reload}
        load={async (q) => {
          const r = await api.tags.listTags({ uidp: { childrenOf: repo.uid }, ...q });
          return { items: r.tags, nextPageToken: r.nextPageToken, totalCount: r.totalCount };
        }}
        columns={[
          { title: "Tag", render: (t) => t.name },
          { title: "Digest", render: (t) => <span class="uid">{t.digest}</span> },
          { title: "Deprecated", render: (t) => (t.deprecated ? "yes" : "") },
          { title: "Updated", render: (t) => time(t.updateTime) },
        ]}
      />
      <FormView
        title="Add a tag"
        submitLabel="Add tag"
        fields={[
          { name: "name", label: "Tag", required: true },
          { name: "digest", label: "Digest (sha256:…)", required: true },
        ]}
        onSubmit={async (v) => {
          await api.tags.createTag({
            parent: repo.uid,
            tag: { name: v.name as string, digest: v.digest as string },
          });
          setReload(reload + 1);
        }}
      />
    </section>
  );
}

export function AdvisoriesTab({ uid }: { uid: string }) {
  const [search, setSearch] = useState({ query: "", aliases: "", componentName: "" });
  const [draft, setDraft] = useState(search);
  const [open, setOpen] = useState<Advisory | undefined>();
  const [reload, setReload] = useState(0);
  return (
    <>
      <h2>Advisories</h2>
      <form
        class="search"
        aria-label="Search advisories"
        onSubmit={(e) => {
          e.preventDefault();
          setSearch(draft);
          setReload(reload + 1);
        }}
      >
        <label>
          Text (id, alias, package)
          <input
            name="query"
            value={draft.query}
            onInput={(e) => setDraft({ ...draft, query: e.currentTarget.value })}
          />
        </label>
        <label>
          Alias (CVE, GHSA…)
          <input
            name="aliases"
            value={draft.aliases}
            onInput={(e) => setDraft({ ...draft, aliases: e.currentTarget.value })}
          />
        </label>
        <label>
          Package
          <input
            name="componentName"
            value={draft.componentName}
            onInput={(e) => setDraft({ ...draft, componentName: e.currentTarget.value })}
          />
        </label>
        <button type="submit">Search</button>
      </form>
      <ListView<Advisory>
        label="Advisories"
        nameLabel="Advisory id"
        reload={reload}
        load={async (q) => {
          const r = await api.advisories.listAdvisories({
            uidp: { descendantsOf: uid },
            ...q,
            ...search,
          });
          return { items: r.advisories, nextPageToken: r.nextPageToken, totalCount: r.totalCount };
        }}
        columns={[
          {
            title: "Advisory",
            render: (a) => (
              <button type="button" class="link" onClick={() => setOpen(a)}>
                {a.advisoryId}
              </button>
            ),
          },
          { title: "Aliases", render: (a) => a.aliases.join(", ") },
          { title: "Package", render: (a) => a.componentName || a.artifactName },
          { title: "Latest event", render: (a) => EventType[a.latestEventType] ?? "" },
        ]}
      />
      {open && (
        <section class="detail" aria-label={`Advisory ${open.advisoryId}`}>
          <h3>{open.advisoryId}</h3>
          <p>{open.summary}</p>
          <h4>Events</h4>
          <ol>
            {open.events.map((e, i) => (
              <li key={i}>
                {time(e.time)} {EventType[e.type]}
                {e.fixedVersion ? ` (fixed in ${e.fixedVersion})` : ""}
                {e.note ? `: ${e.note}` : ""}
              </li>
            ))}
          </ol>
        </section>
      )}
    </>
  );
}
