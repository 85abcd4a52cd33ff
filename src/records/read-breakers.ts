/**
 * The breaker counters `status` shows, dug out of state.json and run.json.
 * Those files belong to the state machine and the runner; their shape may
 * change without this file knowing, so they are read as opaque JSON: any
 * numeric field named like a breaker is taken, under a `limits`/`stop`/`max`
 * path as its limit, elsewhere as its current count. Nothing found is fine.
 */
import { join } from "node:path";
import type { HostFiles } from "../host/host.ts";
import { readCheckpointFile } from "../runtime/checkpoint-file.ts";

export interface Breaker {
  count: number | null;
  limit: number | null;
}

export type Breakers = Record<string, Breaker>;

const BREAKERS: ReadonlyArray<{ name: string; pattern: RegExp }> = [
  { name: "consecutive_failures", pattern: /^consecutive_?failures?(_?(count|streak))?$/i },
  { name: "no_progress", pattern: /^no_?progress(_?(count|streak|iterations))?$/i },
];

const LIMIT_PATH = /(^|\.)(limits?|stop|max|breakers?_?limits?)(\.|$)/i;

function visit(value: unknown, path: string[], depth: number, found: Breakers): void {
  if (depth > 5 || value === null || typeof value !== "object" || Array.isArray(value)) return;
  for (const [key, child] of Object.entries(value as Record<string, unknown>)) {
    if (typeof child === "number" && Number.isFinite(child)) {
      const breaker = BREAKERS.find((b) => b.pattern.test(key));
      if (breaker !== undefined) {
        const entry = (found[breaker.name] ??= { count: null, limit: null });
        const isLimit = LIMIT_PATH.test(path.join(".")) || /^max_?/i.test(key);
        if (isLimit) entry.limit ??= child;
        else entry.count ??= child;
      }
    } else {
      visit(child, [...path, key], depth + 1, found);
    }
  }
}

/** Breakers found in plain data (exported for tests). */
export function findBreakers(...documents: unknown[]): Breakers {
  const found: Breakers = {};
  for (const document of documents) visit(document, [], 0, found);
  return found;
}

function readJson(files: HostFiles, path: string): unknown {
  try {
    return JSON.parse(files.readText(path)) as unknown;
  } catch {
    return null;
  }
}

function parseOrNull(text: string | undefined): unknown {
  try {
    return text === undefined ? null : (JSON.parse(text) as unknown);
  } catch {
    return null;
  }
}

/** Reads the checkpoint (counts) and run.json (limits, if the runner keeps them there) of a run directory. */
export async function readBreakers(dir: string, files: HostFiles): Promise<{ breakers: Breakers; hasState: boolean }> {
  const state = parseOrNull(readCheckpointFile(join(dir, "state.json"), files));
  const run = readJson(files, join(dir, "run.json"));
  return { breakers: findBreakers(state, run), hasState: state !== null };
}
