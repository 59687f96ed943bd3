import { render } from "preact";
import { useEffect, useState } from "preact/hooks";
import type { Caller } from "../../gen/gatehouse/iam/v2beta1/caller_pb.js";
import type { Group } from "../../gen/gatehouse/iam/v2beta1/groups_pb.js";
import { api, type Problem, problemOf } from "./api.js";
import { FormView, ListView, ProblemBox } from "./components.js";
import { GroupPage } from "./group-page.js";
import { inviteWaiting, takeInviteFromAddress, takeWaitingInvite } from "./invite-link.js";
import { groupHref } from "./routes.js";
import {
  completeBrowserSignIn,
  discovery,
  findProviders,
  onSessionChange,
  type ProviderMatch,
  signedIn,
  signInWithToken,
  signOut,
  startBrowserSignIn,
} from "./session.js";

/** The route: `#/` home, `#/group/<uid>/<tab>` a group. */
function useRoute(): string[] {
  const parse = () =>
    location.hash
      .replace(/^#\/?/, "")
      .split("/")
      .filter((p) => p !== "")
      .map(decodeURIComponent);
  const [route, setRoute] = useState(parse);
  useEffect(() => {
    const on = () => setRoute(parse());
    addEventListener("hashchange", on);
    // A hash changed between the first render and this effect (a link followed, or an address
    // typed, as the console drew) fired no event we heard: read it once now.
    on();
    return () => removeEventListener("hashchange", on);
  }, []);
  return route;
}

function App() {
  const [, setTick] = useState(0);
  const [signInError, setSignInError] = useState<string | undefined>();
  useEffect(() => onSessionChange(() => setTick((t) => t + 1)), []);
  useEffect(() => {
    completeBrowserSignIn().then(setSignInError);
  }, []);
  if (!signedIn()) return <SignIn error={signInError} />;
  return <Console />;
}

/** The one provider whose claim of the email's domain DNS verified, if exactly one is. */
function verifiedOnly(found: ProviderMatch[]): ProviderMatch | undefined {
  const verified = found.filter((p) => p.verified);
  return verified.length === 1 ? verified[0] : undefined;
}

function SignIn({ error }: { error: string | undefined }) {
  const [ep, setEp] = useState<Awaited<ReturnType<typeof discovery>>>({});
  const [token, setToken] = useState("");
  const [provider, setProvider] = useState("");
  const [choices, setChoices] = useState<ProviderMatch[] | undefined>();
  const [lookupError, setLookupError] = useState<string | undefined>();
  useEffect(() => {
    discovery().then(setEp);
  }, []);
  return (
    <main class="signin">
      <h1>Gatehouse console</h1>
      {inviteWaiting() && (
        <p class="note" role="status">
          You were invited to join a group: sign in, and the invite is redeemed.
        </p>
      )}
      {error && (
        <div class="problem" role="alert">
          {error}
        </div>
      )}
      {ep.authorization_endpoint && (
        <section aria-labelledby="browser-signin">
          <h2 id="browser-signin">Sign in with your identity provider</h2>
          {ep.gatehouse_login_provider && (
            <button type="button" onClick={() => startBrowserSignIn()}>
              Sign in with {ep.gatehouse_login_provider.name}
            </button>
          )}
          <form
            onSubmit={async (e) => {
              e.preventDefault();
              setChoices(undefined);
              setLookupError(undefined);
              const wanted = provider.trim();
              // A uid is taken as it is; anything else is a provider's name.
              if (/^[0-9a-f]{40}(\/[0-9a-f]{16})+$/.test(wanted)) {
                await startBrowserSignIn(wanted);
                return;
              }
              // An email address picks the providers that declare its domain; anything else
              // is a provider's name.
              const byEmail = wanted.includes("@");
              const found = await findProviders(byEmail ? "email" : "name", wanted).catch(
                () => undefined,
              );
              if (!found)
                setLookupError(
                  byEmail
                    ? "Could not look the provider up: is this an email address? Try again."
                    : "Could not look the provider up; try again.",
                );
              // Only a domain DNS proved the organization's starts a sign-in by itself: anyone
              // may name a provider anything or declare any domain, so otherwise the person
              // sees who declares each provider and chooses.
              else if (verifiedOnly(found)) await startBrowserSignIn(verifiedOnly(found)!.uid);
              else if (found.length === 0)
                setLookupError(
                  byEmail
                    ? `No identity provider declares the domain of ${wanted}: ask your administrator for its name.`
                    : `No identity provider is named ${wanted}.`,
                );
              else setChoices(found);
            }}
          >
            <label>
              Your work email, or your organization's identity provider (its name)
              <input
                name="identityProvider"
                value={provider}
                onInput={(e) => setProvider(e.currentTarget.value)}
              />
            </label>
            <button type="submit" disabled={provider.trim() === ""}>
              Sign in through this provider
            </button>
            {lookupError && (
              <p class="problem" role="alert">
                {lookupError}
              </p>
            )}
          </form>
          {choices && (
            <section aria-label="Matching providers">
              <p>
                {choices.length === 1
                  ? "One identity provider matches. Sign in through it only if its organization is yours:"
                  : "Several identity providers match: which one is your organization's?"}
              </p>
              <ul>
                {choices.map((c, i) => (
                  <li key={c.uid}>
                    <button type="button" title={c.uid} onClick={() => startBrowserSignIn(c.uid)}>
                      {c.name}, declared by the organization {c.organization}
                      {c.verified ? " (domain verified)" : " (not verified)"} ({i + 1} of{" "}
                      {choices.length}, uid ending {c.uid.slice(-6)})
                    </button>
                  </li>
                ))}
              </ul>
            </section>
          )}
        </section>
      )}
      <section aria-labelledby="token-signin">
        <h2 id="token-signin">Sign in with a token</h2>
        <p>
          Paste a token: the one <code>gatehouse bootstrap</code> printed, or the output of{" "}
          <code>gatehouse auth token</code>. It is kept in this tab only.
        </p>
        <form
          onSubmit={(e) => {
            e.preventDefault();
            if (token.trim() !== "") signInWithToken(token);
          }}
        >
          <label>
            Token
            <textarea
              name="token"
              rows={4}
              value={token}
              onInput={(e) => setToken(e.currentTarget.value)}
            />
          </label>
          <button type="submit">Sign in</button>
        </form>
      </section>
    </main>
  );
}

function Console() {
  const route = useRoute();
  const [caller, setCaller] = useState<Caller | undefined>();
  const [problem, setProblem] = useState<Problem | undefined>();
  const [reload, setReload] = useState(0);
  const [joined, setJoined] = useState<string | undefined>();
  // An invite link opened before signing in: redeemed now, once.
  useEffect(() => {
    const code = takeWaitingInvite();
    if (code === undefined) return;
    api.invites
      .redeemGroupInvite({ code })
      .then((b) => {
        setJoined(`You joined ${b.group?.name ?? "the group"} as ${b.role?.name ?? "a member"}.`);
        setReload((r) => r + 1);
        if (b.group) location.hash = groupHref(b.group.uid);
      })
      .catch((err) => setProblem(problemOf(err)));
  }, []);
  useEffect(() => {
    api.caller
      .getCaller({})
      .then(setCaller)
      .catch((err) => setProblem(problemOf(err)));
  }, [reload]);
  return (
    <>
      <header class="top">
        <a href="#/" class="brand">
          Gatehouse
        </a>
        <span class="who" title={caller?.identity?.uid}>
          {caller?.identity?.name ?? ""}
        </span>
        <button type="button" onClick={() => signOut()}>
          Sign out
        </button>
      </header>
      <main>
        <ProblemBox problem={problem} />
        {joined && (
          <p class="note" role="status">
            {joined}
          </p>
        )}
        {route[0] === "group" && route[1] ? (
          <GroupPage key={route[1]} uid={route[1]} tab={route[2] ?? "subgroups"} />
        ) : (
          <Home caller={caller} reload={reload} onChange={() => setReload(reload + 1)} />
        )}
      </main>
    </>
  );
}

function Home(props: { caller: Caller | undefined; reload: number; onChange: () => void }) {
  const { caller, reload, onChange } = props;
  const groups = new Map<string, { name: string; roles: string[] }>();
  for (const b of caller?.roleBindings ?? []) {
    if (!b.group) continue;
    const g = groups.get(b.group.uid) ?? { name: b.group.name, roles: [] };
    g.roles.push(b.role?.name ?? b.roleUid);
    groups.set(b.group.uid, g);
  }
  return (
    <>
      <h1>Your groups</h1>
      {groups.size === 0 ? (
        <p>You hold no roles yet: create an organization, or redeem an invite.</p>
      ) : (
        <table>
          <thead>
            <tr>
              <th scope="col">Group</th>
              <th scope="col">Your roles</th>
            </tr>
          </thead>
          <tbody>
            {[...groups].map(([uid, g]) => (
              <tr key={uid}>
                <td>
                  <a href={groupHref(uid)} title={uid}>
                    {g.name}
                  </a>
                </td>
                <td>{g.roles.join(", ")}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <h2>Groups you can see</h2>
      <ListView<Group>
        label="Groups you can see"
        reload={reload}
        load={async (q) => {
          const r = await api.groups.listGroups(q);
          return { items: r.groups, nextPageToken: r.nextPageToken, totalCount: r.totalCount };
        }}
        columns={[
          {
            title: "Name",
            render: (g) => (
              <a href={groupHref(g.uid)} title={g.uid}>
                {g.name}
              </a>
            ),
          },
          { title: "Description", render: (g) => g.description },
        ]}
      />
      {/* Offered only where the operator lets this person create one (GetCaller says). */}
      {caller?.mayCreateOrganization && (
        <FormView
          title="Create an organization"
          submitLabel="Create organization"
          fields={[
            { name: "name", label: "Name", required: true },
            { name: "description", label: "Description" },
          ]}
          onSubmit={async (v) => {
            const g = await api.groups.createGroup({
              parent: "",
              group: { name: v.name as string, description: v.description as string },
            });
            onChange();
            location.hash = groupHref(g.uid);
          }}
        />
      )}
      {caller && !caller.mayCreateOrganization && (
        <p class="note" id="no-org-creation">
          {caller.organizationCreationRefusal}
        </p>
      )}
      <FormView
        title="Redeem an invite"
        submitLabel="Redeem"
        fields={[{ name: "code", label: "Invite code", required: true }]}
        onSubmit={async (v) => {
          await api.invites.redeemGroupInvite({ code: (v.code as string).trim() });
          onChange();
        }}
      />
    </>
  );
}

takeInviteFromAddress();
const root = document.getElementById("app");
if (root) render(<App />, root);
