import { create } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import type { ServiceImpl } from "@connectrpc/connect";
import { TeamRefSchema } from "../../../gen/gatehouse/common/v2beta1/common_pb.js";
import {
  ListPeopleResponseSchema,
  ListPersonSessionsResponseSchema,
  type PeopleService,
  type Person,
  Person_Origin,
  PersonSchema,
  SessionSchema,
} from "../../../gen/gatehouse/iam/v2beta1/people_pb.js";
import { personUid, providerPersonUid } from "../../auth/login/person.js";
import { storeOf } from "../../call-store.js";
import { notFound } from "../../errors.js";
import type { ListEngine } from "../../list/list.js";
import type { IdentityProviderRecord } from "../../store/iam-store.js";
import type { PersonRecord } from "../../store/people-store.js";
import type { Store } from "../../store/store.js";
import { rootOf } from "../../uid.js";
import { maxNameLength, violations } from "../../validation/field-rules.js";
import { listOptionsOf } from "../caller.js";
import { toRoleBinding } from "./role-bindings.js";

/** What the people service needs. */
export interface PeopleDeps {
  store: Store;
  lists: ListEngine;
  now: () => number;
}

// A session id is 16 random bytes in base64url (oauth-routes.ts); anything else finds nothing.
const sessionIdPattern = /^[A-Za-z0-9_-]{1,64}$/;

/**
 * Create the PeopleService: an owner's view of the people of a group's subtree (its
 * organization's, at the root), with their verified emails, how they came, their roles and
 * their sessions. The access interceptor has checked people.list (or people.update) at the
 * request's group; a person who is not one of its people is NOT_FOUND, whoever they are.
 */
export function createPeopleService(deps: PeopleDeps): ServiceImpl<typeof PeopleService> {
  const { store, lists, now } = deps;

  /** The person `uid` of `group`'s people, or NOT_FOUND. */
  const personOf = async (group: string, uid: string, field: string) => {
    const v = violations();
    // A person's identity is a root uid (40 hex characters): anything else is no person.
    if (!/^[0-9a-f]{40}$/.test(uid)) v.add(field, "is not a person's uid");
    v.throwIfAny();
    const person = await store.getPerson(group, uid);
    if (!person) throw notFound("person", uid);
    return person;
  };

  /**
   * The API message of a person, with the bindings they hold at the request's group and below
   * (their own and their teams', each saying which team), and their teams. `providers` gives the
   * organization's identity providers, read once for a whole page.
   */
  const toPerson = async (
    p: PersonRecord,
    providers: () => Promise<readonly IdentityProviderRecord[]>,
  ): Promise<Person> =>
    create(PersonSchema, {
      uid: p.uid,
      name: p.name,
      email: p.email,
      ...(await originOf(providers, p)),
      lastSignInTime: timestampFromMs(p.lastSeenTime),
      createTime: timestampFromMs(p.createTime),
      roleBindings: p.roleBindings.map(toRoleBinding),
      teams: p.teams.map((t) => create(TeamRefSchema, { uid: t.uid, name: t.name })),
    });

  /** The identity providers of `group`'s organization, read at the first need, then kept. */
  const providersOf = (group: string) => {
    let read: Promise<readonly IdentityProviderRecord[]> | undefined;
    return () => {
      read ??= store
        .listIdentityProviders({
          filters: {},
          descendantsOf: rootOf(group),
          order: { field: "uid", desc: false },
          skip: 0,
          limit: 10_000,
        })
        .then((page) => page.items);
      return read;
    };
  };

  return {
    async listPeople(req, ctx) {
      const v = violations();
      if (req.query.length > maxNameLength) {
        v.add("query", `must be at most ${maxNameLength} characters`);
      }
      if (req.query.includes("\u0000")) v.add("query", "may not contain the NUL character");
      v.throwIfAny();
      const query = lists.parse(
        { ...req, uidp: undefined, name: "" },
        { group: req.groupUid, search: req.query.trim() },
        listOptionsOf(ctx),
      );
      const page = await store.listPeople(query);
      const { items, ...envelope } = lists.finish(query, page, (p, field) =>
        field === "name"
          ? p.name
          : field === "uid"
            ? p.uid
            : field === "update_time"
              ? p.updateTime
              : p.createTime,
      );
      const providers = providersOf(req.groupUid);
      const people: Person[] = [];
      for (const p of items) people.push(await toPerson(p, providers));
      return create(ListPeopleResponseSchema, { people, ...envelope });
    },

    async getPerson(req) {
      const person = await personOf(req.groupUid, req.uid, "uid");
      return toPerson(person, providersOf(req.groupUid));
    },

    async listPersonSessions(req) {
      const person = await personOf(req.groupUid, req.personUid, "person_uid");
      const sessions = await store.listPersonSessions(person.uid, now());
      return create(ListPersonSessionsResponseSchema, {
        sessions: sessions.map((s) =>
          create(SessionSchema, {
            id: s.id,
            clientId: s.clientId,
            createTime: timestampFromMs(s.createTime),
            expireTime: timestampFromMs(s.expireTime),
          }),
        ),
      });
    },

    async revokePersonSessions(req, ctx) {
      const store = storeOf(ctx);
      const v = violations();
      if (req.sessionId !== "" && !sessionIdPattern.test(req.sessionId)) {
        v.add("session_id", "is not a session id");
      }
      v.throwIfAny();
      const person = await personOf(req.groupUid, req.personUid, "person_uid");
      const revoked = await store.revokePersonSessions(
        req.groupUid,
        person.uid,
        req.sessionId,
        now(),
      );
      return { revokedCount: revoked.count };
    },
  };
}

/**
 * How a person came to the organization (`providers`: its identity providers): through an
 * identity provider when one is recorded, or when their identity is scoped to one of the
 * organization's providers (providerPersonUid: people who signed in before origins were
 * recorded); else the first recorded way in (an invite, SCIM); else a plain sign-in.
 */
async function originOf(
  providers: () => Promise<readonly IdentityProviderRecord[]>,
  p: PersonRecord,
): Promise<Pick<Person, "origin" | "identityProviderUid">> {
  if (p.origin?.kind === "identity_provider") {
    return { origin: Person_Origin.IDENTITY_PROVIDER, identityProviderUid: p.origin.sourceUid };
  }
  if (p.uid !== personUid(p.issuer, p.subject)) {
    const idp = (await providers()).find(
      (i) => providerPersonUid(i.uid, p.issuer, p.subject) === p.uid,
    );
    if (idp) return { origin: Person_Origin.IDENTITY_PROVIDER, identityProviderUid: idp.uid };
  }
  switch (p.origin?.kind) {
    case "invite":
      return { origin: Person_Origin.INVITE, identityProviderUid: "" };
    case "scim":
      return { origin: Person_Origin.SCIM, identityProviderUid: "" };
    default:
      return { origin: Person_Origin.SIGN_IN, identityProviderUid: "" };
  }
}
