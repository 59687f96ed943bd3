import { useEffect, useState } from "preact/hooks";
import {
  type Person,
  Person_Origin,
  type Session,
} from "../../../gen/gatehouse/iam/v2beta1/people_pb.js";
import { api, type Problem, problemOf } from "../api.js";
import type { Can } from "../caps.js";
import { ConfirmButton, ListView, ProblemBox, time } from "../components.js";

const origins: Record<Person_Origin, string> = {
  [Person_Origin.UNSPECIFIED]: "",
  [Person_Origin.SIGN_IN]: "Sign-in",
  [Person_Origin.IDENTITY_PROVIDER]: "Identity provider",
  [Person_Origin.INVITE]: "Invite",
  [Person_Origin.SCIM]: "Directory (SCIM)",
};

/**
 * The people of a group (owners: people.list): name, email, how they came, last sign-in,
 * roles (saying which come through a team) and teams, searched by name or email; a person's
 * sessions, which people.update ends.
 */
export function PeopleTab({ uid, can }: { uid: string; can: Can }) {
  const [chosen, setChosen] = useState<Person | undefined>();
  return (
    <>
      <h2>People</h2>
      <ListView<Person>
        label="People"
        nameLabel="Name or email"
        filterHint="contains"
        orders={[
          ["name", "name"],
          ["name desc", "name, descending"],
          ["create_time", "first sign-in, oldest first"],
          ["create_time desc", "first sign-in, newest first"],
        ]}
        load={async (q) => {
          const r = await api.people.listPeople({
            groupUid: uid,
            query: q.name,
            pageSize: q.pageSize,
            pageToken: q.pageToken,
            orderBy: q.orderBy,
          });
          return { items: r.people, nextPageToken: r.nextPageToken, totalCount: r.totalCount };
        }}
        columns={[
          { title: "Name", render: (p) => <span title={p.uid}>{p.name}</span> },
          { title: "Email", render: (p) => p.email },
          { title: "Came through", render: (p) => origins[p.origin] },
          { title: "Last sign-in", render: (p) => time(p.lastSignInTime) },
          {
            title: "Roles",
            render: (p) =>
              p.roleBindings
                .map(
                  (b) =>
                    `${b.role?.name ?? ""} at ${b.group?.name ?? ""}` +
                    (b.team ? ` (through team ${b.team.name})` : ""),
                )
                .join(", "),
          },
          {
            title: "Teams",
            // Names shown, uids on hover, as everywhere in the console.
            render: (p) =>
              p.teams.map((t, i) => (
                <span key={t.uid} title={t.uid}>
                  {i > 0 && ", "}
                  {t.name}
                </span>
              )),
          },
          {
            title: "Sessions",
            render: (p) => (
              <button type="button" onClick={() => setChosen(p)}>
                Sessions of {p.name}
              </button>
            ),
          },
        ]}
      />
      {chosen && (
        <Sessions key={chosen.uid} group={uid} person={chosen} mayEnd={can("people.update")} />
      )}
    </>
  );
}

/** A person's active sessions, each with an End button, and one to end them all. */
function Sessions({ group, person, mayEnd }: { group: string; person: Person; mayEnd: boolean }) {
  const [sessions, setSessions] = useState<Session[] | undefined>();
  const [problem, setProblem] = useState<Problem | undefined>();
  const [version, setVersion] = useState(0);
  useEffect(() => {
    api.people
      .listPersonSessions({ personUid: person.uid, groupUid: group })
      .then((r) => setSessions(r.sessions))
      .catch((err) => setProblem(problemOf(err)));
  }, [person.uid, group, version]);
  const end = async (sessionId: string) => {
    await api.people.revokePersonSessions({ personUid: person.uid, groupUid: group, sessionId });
    setVersion(version + 1);
  };
  return (
    <section aria-label={`Sessions of ${person.name}`}>
      <h3>Sessions of {person.name}</h3>
      <ProblemBox problem={problem} />
      {sessions?.length === 0 && <p>No active session.</p>}
      {sessions && sessions.length > 0 && (
        <>
          <table aria-label="Sessions">
            <thead>
              <tr>
                <th scope="col">Signed in</th>
                <th scope="col">Through</th>
                <th scope="col">Ends unless used</th>
                <th scope="col">End</th>
              </tr>
            </thead>
            <tbody>
              {sessions.map((s) => (
                <tr key={s.id}>
                  <td>{time(s.createTime)}</td>
                  <td>{s.clientId}</td>
                  <td>{time(s.expireTime)}</td>
                  <td>
                    {mayEnd && (
                      <ConfirmButton
                        label="End"
                        confirm={`End this session of ${person.name}?`}
                        action={() => end(s.id)}
                      />
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
          {mayEnd && (
            <ConfirmButton
              label="End all sessions"
              confirm={`End every session of ${person.name}? They must sign in again.`}
              action={() => end("")}
            />
          )}
        </>
      )}
    </section>
  );
}
