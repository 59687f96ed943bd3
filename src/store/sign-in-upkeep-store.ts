/**
 * What keeps people's sign-in bounded: sealed logins redeemed once, and the purge of what a
 * sign-in leaves behind once nothing needs it (expired codes and refresh tokens, ended
 * sessions, people created by a sign-in they never completed). See src/auth/oauth/.
 */
export interface SignInUpkeepStore {
  /**
   * Record that the sealed login of `stateHash` was redeemed at a callback, kept until
   * `expireTime` (the login's own expiry, after which it is refused anyway). True the first
   * time, false if it was already spent, on every replica.
   */
  spendLogin(stateHash: string, expireTime: number): Promise<boolean>;
  /**
   * Note that `identityUid`, a person, started a sign-in at `now` that no code redemption has
   * completed yet: if `created` (the sign-in made the person), from now on; otherwise only if
   * the person has not completed one before (the note moves to `now`). Redeeming a code of
   * the person removes the note.
   */
  noteUnfinishedSignIn(identityUid: string, created: boolean, now: number): Promise<void>;
  /**
   * Delete, at `now`: spent logins, authorization codes and refresh tokens past their expiry
   * (a spent refresh token stays until then, so that its reuse is still caught), and sessions
   * that are revoked or have neither a code nor a refresh token left. Returns the counts, and
   * the people whose unfinished sign-in was noted at or before `unfinishedBefore`, who have
   * not been seen since and have no session left: the caller deletes them (deleteIdentity,
   * which keeps an organization's last owner), and the idle people (at most 1,000, the least
   * recently seen first): root people not seen since `idleBefore` who hold nothing, neither a
   * role binding, a session, a provider they are the writer of, an invite they created, nor
   * an unfinished sign-in. The caller deletes them with deleteIdlePerson.
   */
  purgeSignIns(now: number, unfinishedBefore: number, idleBefore: number): Promise<SignInPurge>;
  /**
   * Delete the person `uid` if they are still idle as purgeSignIns finds them (checked in the
   * same transaction). Throws `failed_precondition` if they hold something or were seen since
   * `idleBefore`, or are no such person.
   */
  deleteIdlePerson(uid: string, idleBefore: number): Promise<void>;
}

/** What purgeSignIns deleted, and the people it found to delete. */
export interface SignInPurge {
  spentLogins: number;
  codes: number;
  refreshTokens: number;
  /** Device authorizations past their expiry, decided or not. */
  deviceCodes: number;
  sessions: number;
  /** Uids of people who never completed a sign-in (not deleted yet). */
  unfinishedPeople: string[];
  /** Uids of people who hold nothing and were not seen for the retention (not deleted yet). */
  idlePeople: string[];
}
