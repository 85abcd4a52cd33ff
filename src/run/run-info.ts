/** What run.json records about a run, and the hash that ties a run to its pipeline. */
import { createHash } from "node:crypto";
import { dirname, relative, resolve } from "node:path";
import type { JsonValue } from "../expr/index.ts";

/** What run.json records. */
export interface RunInfo {
  run_id: string;
  pipeline: string;
  file: string;
  hash: string;
  version: string;
  params: Record<string, JsonValue>;
  workdir: string;
  started_at: string;
  agents: Record<string, string>;
  max_iterations: number;
}

/** Hash of the pipeline and its prompt files: resume refuses a changed pipeline. */
export function pipelineHash(file: string, text: string, promptFiles: Record<string, string | undefined>): string {
  const h = createHash("sha256").update(text);
  // prompt files by their path relative to the pipeline, however the pipeline was named
  const base = dirname(resolve(file));
  const entries = Object.entries(promptFiles).map(([k, v]) => [relative(base, resolve(k)), v ?? ""] as const);
  for (const [k, v] of entries.sort((a, b) => a[0].localeCompare(b[0]))) h.update(`\0${k}\0${v}`);
  return `sha256:${h.digest("hex")}`;
}
