// Build the web console once per test run, as `npm run build` does, so that every test server
// serves the current bundle.
export default async function setup(): Promise<void> {
  // @ts-expect-error: a plain JavaScript build script without types
  const { buildConsole } = await import("../console/build.mjs");
  await buildConsole();
}
