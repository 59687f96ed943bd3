/**
 * Once per run of a tier that loads the web console (browser): build it, as `npm run build`
 * does, so that its test servers serve the current bundle. Other tiers do not pay for it; a
 * server without a built console says so once and serves the API as before.
 */
export default async function setup(): Promise<void> {
  // @ts-expect-error: a plain JavaScript build script without types
  const { buildConsole } = await import("../../console/build.mjs");
  await buildConsole();
}
