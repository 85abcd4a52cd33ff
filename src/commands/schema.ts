import { fileURLToPath } from "node:url";
import { hostOf, type CliIo } from "./cli-io.ts";

/** `phaseloop schema`: the published JSON Schema, for editors and tools. */
export async function main(argv: string[], io: CliIo): Promise<number> {
  if (argv.includes("--help") || argv.includes("-h")) {
    io.stdout("Usage: phaseloop schema [options]\n\nPrints the pipeline JSON Schema (format v1), for editors and other tools.\n\nOptions:\n  -h, --help   this text\n");
    return 0;
  }
  if (argv.length > 0) {
    io.stderr(`phaseloop schema: unexpected argument "${argv[0]}"\n`);
    return 2;
  }
  // src/commands/ and dist/commands/ both sit two levels under the package root
  io.stdout(hostOf(io).files.readText(fileURLToPath(new URL("../../schemas/pipeline.schema.json", import.meta.url))));
  return 0;
}
