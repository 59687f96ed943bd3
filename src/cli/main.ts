import { ConfigError, settingsHelp } from "../config.js";
import { importCommand, importUsage } from "./import.js";
import { serve } from "./serve.js";

const usage = `Usage: gatehouse <command> [options]

Commands:
  serve            serve the API (gRPC, gRPC-Web, Connect and REST on one port)
${importUsage}
  help             show this text

Options of serve (each also read from its environment variable):
${settingsHelp()}
`;

/** Run the gatehouse command line; resolves to the process exit code. */
export async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  try {
    switch (command) {
      case "serve":
        if (rest.includes("--help") || rest.includes("-h")) return help();
        return await serve(rest);
      case "import":
        return await importCommand(rest);
      case undefined:
      case "help":
      case "--help":
      case "-h":
        return help();
      default:
        process.stderr.write(`gatehouse: unknown command ${JSON.stringify(command)}\n\n${usage}`);
        return 2;
    }
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`gatehouse: configuration error: ${err.message}\n`);
      return 2;
    }
    throw err;
  }
}

function help(): number {
  process.stdout.write(usage);
  return 0;
}
