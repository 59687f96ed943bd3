/** A digest made of one repeated hex character. */
export const digestOf = (c: string) => `sha256:${c.repeat(64)}`;
