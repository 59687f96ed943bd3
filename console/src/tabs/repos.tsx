import { useState } from "preact/hooks";
import type { Repo } from "../../../gen/gatehouse/registry/v2beta1/repos_pb.js";
import type { Tag } from "../../../gen/gatehouse/registry/v2beta1/tags_pb.js";
import { api } from "../api.js";
import type { Can } from "../caps.js";
import { ConfirmButton, CopyText, FormView, ListView, time } from "../components.js";

/** A group's repos, and the tags of the one chosen. */
export function ReposTab({ uid, can }: { uid: string; can: Can }) {
  const [reload, setReload] = useState(0);
  const [repo, setRepo] = useState<Repo | undefined>();
  const [opened, setOpened] = useState(0);
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
              <button
                type="button"
                class="link"
                onClick={() => {
                  setRepo(r);
                  // The repo shown already: a click shows its tags as they are now.
                  setOpened((n) => n + 1);
                }}
              >
                {r.name}
              </button>
            ),
          },
          {
            // The server computes it by the registry's naming rule; empty without a registry.
            title: "Pull reference",
            render: (r) => (r.pullReference ? <CopyText text={r.pullReference} /> : ""),
          },
          { title: "Description", render: (r) => r.description },
          {
            // Public: anyone may pull its images from the registry, without credentials.
            title: "Public",
            render: (r) => (
              <>
                {r.public ? "yes " : "no "}
                {can("repo.update") && (
                  <ConfirmButton
                    label={r.public ? "Make private" : "Make public"}
                    confirm={
                      r.public
                        ? `Make the repo ${r.name} private? Pulls will need credentials.`
                        : `Make the repo ${r.name} public? Anyone may pull its images.`
                    }
                    action={async () => {
                      await api.repos.updateRepo({
                        repo: { uid: r.uid, public: !r.public },
                        updateMask: { paths: ["public"] },
                      });
                      setReload(reload + 1);
                    }}
                  />
                )}
              </>
            ),
          },
          {
            title: "Delete",
            render: (r) =>
              can("repo.delete") ? (
                <ConfirmButton
                  label="Delete"
                  confirm={`Delete the repo ${r.name}?`}
                  action={async () => {
                    await api.repos.deleteRepo({ uid: r.uid });
                    setRepo(undefined);
                    setReload(reload + 1);
                  }}
                />
              ) : null,
          },
        ]}
      />
      {can("repo.create") && (
        <FormView
          title="Create a repo"
          submitLabel="Create repo"
          fields={[
            { name: "name", label: "Name", required: true },
            { name: "description", label: "Description" },
            { name: "public", label: "Public (anyone may pull)", type: "checkbox" },
          ]}
          onSubmit={async (v) => {
            await api.repos.createRepo({
              parent: uid,
              repo: {
                name: v.name as string,
                description: v.description as string,
                public: v.public === "true",
              },
            });
            setReload(reload + 1);
          }}
        />
      )}
      {repo && <TagsOf repo={repo} can={can} opened={opened} />}
    </>
  );
}

function TagsOf({ repo, can, opened }: { repo: Repo; can: Can; opened: number }) {
  const [reload, setReload] = useState(0);
  return (
    <section class="detail" aria-label={`Repo ${repo.name}`}>
      <h3>Tags of {repo.name}</h3>
      {repo.pullReference && (
        <p>
          Pull: <CopyText text={repo.pullReference} />
        </p>
      )}
      <ListView
        key={repo.uid}
        label={`Tags of ${repo.name}`}
        reload={reload + opened}
        load={async (q) => {
          const r = await api.tags.listTags({ uidp: { childrenOf: repo.uid }, ...q });
          return { items: r.tags, nextPageToken: r.nextPageToken, totalCount: r.totalCount };
        }}
        columns={[
          { title: "Tag", render: (t) => t.name },
          { title: "Digest", render: (t) => <span class="uid">{t.digest}</span> },
          { title: "Deprecated", render: (t) => (t.deprecated ? "yes" : "") },
          ...(repo.pullReference
            ? [
                {
                  // By tag (moves with pushes) and by digest (pinned).
                  title: "Pull",
                  render: (t: Tag) => (
                    <>
                      <CopyText text={`${repo.pullReference}:${t.name}`} shown={`:${t.name}`} />{" "}
                      <CopyText
                        text={`${repo.pullReference}@${t.digest}`}
                        shown={`@${t.digest.slice(0, 19)}…`}
                      />
                    </>
                  ),
                },
              ]
            : []),
          { title: "Updated", render: (t) => time(t.updateTime) },
        ]}
      />
      {can("tag.create") && (
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
      )}
    </section>
  );
}
