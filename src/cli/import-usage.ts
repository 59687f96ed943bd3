/** The usage lines of `gatehouse import`, for the command's help. */
export const importUsage = `  import advisories --group <uid> <file>   upsert OSV advisories (JSON, array, JSON lines; gzip ok)
  import tags --repo <uid> <file>          upsert {name, digest} tags into a repo`;
