import { useEffect, useState } from "preact/hooks";
import type { RoleBinding } from "../../../gen/gatehouse/iam/v2beta1/role_bindings_pb.js";
import type { Team, TeamMember } from "../../../gen/gatehouse/iam/v2beta1/teams_pb.js";
import { api, type Problem, problemOf } from "../api.js";
import type { Can } from "../caps.js";
import { ConfirmButton, FormView, ListView, ProblemBox, time } from "../components.js";
import { all, type Option, orgOf, usePickers } from "../pickers.js";

/**
 * The teams of a group: create (name, description), delete, and a team's members (added by
 * identity uid, removed) and the role bindings made to it, whose roles its members hold.
 */
export function TeamsTab({ uid, can }: { uid: string; can: Can }) {
  const [reload, setReload] = useState(0);
  const [chosen, setChosen] = useState<Team | undefined>();
  const { roles } = usePickers(uid, reload);
  return (
    <>
      <h2>Teams</h2>
      <ListView<Team>
        label="Teams"
        reload={reload}
        load={async (q) => {
          const r = await api.teams.listTeams({ uidp: { childrenOf: uid }, ...q });
          return { items: r.teams, nextPageToken: r.nextPageToken, totalCount: r.totalCount };
        }}
        columns={[
          { title: "Name", render: (t) => <span title={t.uid}>{t.name}</span> },
          { title: "Description", render: (t) => t.description },
          { title: "Members", render: (t) => String(t.memberCount) },
          {
            title: "Open",
            render: (t) => (
              <button type="button" onClick={() => setChosen(t)}>
                Members of {t.name}
              </button>
            ),
          },
          {
            title: "Delete",
            render: (t) =>
              can("teams.delete") ? (
                <ConfirmButton
                  label="Delete"
                  confirm={`Delete the team ${t.name}? Its role bindings go with it.`}
                  action={async () => {
                    await api.teams.deleteTeam({ uid: t.uid });
                    if (chosen?.uid === t.uid) setChosen(undefined);
                    setReload(reload + 1);
                  }}
                />
              ) : null,
          },
        ]}
      />
      {chosen && (
        <TeamMembers
          key={chosen.uid}
          team={chosen}
          group={uid}
          roles={can("role_bindings.create") ? roles : []}
          mayChange={can("teams.update")}
          onChange={() => setReload(reload + 1)}
        />
      )}
      {can("teams.create") && (
        <FormView
          title="Create a team"
          submitLabel="Create team"
          fields={[
            { name: "name", label: "Name", required: true },
            { name: "description", label: "Description" },
          ]}
          onSubmit={async (v) => {
            await api.teams.createTeam({
              parent: uid,
              team: { name: v.name as string, description: v.description as string },
            });
            setReload(reload + 1);
          }}
        />
      )}
    </>
  );
}

/**
 * A team's members (each with Remove), a form to add one by uid, the team's role bindings and
 * a form to grant it one of `roles` (those the caller may grant) at `group`.
 */
function TeamMembers(props: {
  team: Team;
  group: string;
  roles: Option[];
  mayChange: boolean;
  onChange: () => void;
}) {
  const { team, group, roles, mayChange, onChange } = props;
  const [members, setMembers] = useState<TeamMember[] | undefined>();
  const [bindings, setBindings] = useState<RoleBinding[]>([]);
  const [problem, setProblem] = useState<Problem | undefined>();
  const [version, setVersion] = useState(0);
  useEffect(() => {
    all((pageToken) =>
      api.teams
        .listTeamMembers({ uid: team.uid, pageSize: 200, pageToken })
        .then((r) => ({ items: r.members, nextPageToken: r.nextPageToken })),
    )
      .then(setMembers)
      .catch((err) => setProblem(problemOf(err)));
    // The team's bindings anywhere in its organization (a caller who may not list them there
    // still sees the members).
    api.bindings
      .listRoleBindings({ uidp: { descendantsOf: orgOf(team.uid) }, team: team.uid })
      .then((r) => setBindings(r.roleBindings))
      .catch(() => setBindings([]));
  }, [team.uid, version]);
  const changed = () => {
    setVersion(version + 1);
    onChange();
  };
  return (
    <section aria-label={`Members of ${team.name}`}>
      <h3>Members of {team.name}</h3>
      <ProblemBox problem={problem} />
      {members?.length === 0 && <p>No member yet.</p>}
      {members && members.length > 0 && (
        <table aria-label="Team members">
          <thead>
            <tr>
              <th scope="col">Identity</th>
              <th scope="col">Uid</th>
              <th scope="col">Added</th>
              <th scope="col">Remove</th>
            </tr>
          </thead>
          <tbody>
            {members.map((m) => (
              <tr key={m.identity?.uid}>
                <td>{m.identity?.name}</td>
                <td class="uid">{m.identity?.uid}</td>
                <td>{time(m.createTime)}</td>
                <td>
                  {mayChange && (
                    <ConfirmButton
                      label="Remove"
                      confirm={`Remove ${m.identity?.name} from ${team.name}?`}
                      action={async () => {
                        await api.teams.removeTeamMembers({
                          uid: team.uid,
                          identityUids: [m.identity?.uid ?? ""],
                        });
                        changed();
                      }}
                    />
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {mayChange && (
        <FormView
          title="Add a member"
          submitLabel="Add member"
          fields={[{ name: "identityUids", label: "Identity uid", required: true }]}
          onSubmit={async (v) => {
            await api.teams.addTeamMembers({
              uid: team.uid,
              identityUids: [(v.identityUids as string).trim()],
            });
            changed();
          }}
        />
      )}
      <h4>Roles of {team.name}</h4>
      {bindings.length === 0 ? (
        <p>No role binding names this team.</p>
      ) : (
        <ul aria-label={`Roles of ${team.name}`}>
          {bindings.map((b) => (
            <li key={b.uid}>
              {b.role?.name} at {b.group?.name}
            </li>
          ))}
        </ul>
      )}
      {roles.length > 0 && (
        <FormView
          title={`Grant a role to ${team.name}`}
          submitLabel="Grant to team"
          fields={[{ name: "roleUid", label: "Role", type: "select", options: roles }]}
          onSubmit={async (v) => {
            await api.bindings.createRoleBinding({
              parent: group,
              roleBinding: { teamUid: team.uid, roleUid: v.roleUid as string },
            });
            changed();
          }}
        />
      )}
    </section>
  );
}
