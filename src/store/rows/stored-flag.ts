/**
 * A boolean column as a backend reads it: SQLite has no boolean type and stores 0 or 1,
 * PostgreSQL returns a boolean. Shared mappers read it with `Boolean(flag)`, right for both.
 */
export type StoredFlag = number | boolean;
