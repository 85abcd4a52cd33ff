/**
 * Which run a `status` or `logs` command means: the latest by default, an
 * exact id, or an unambiguous prefix of one (ids are long time stamps).
 */
import { join } from "node:path";
import type { HostFiles } from "../host/host.ts";
import { listRunIds } from "../runtime/run-store.ts";

export type RunSelection = { ok: true; runId: string } | { ok: false; message: string; hint?: string };

/** Edit distance, for did-you-mean hints. */
export function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_unused, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      row.push(Math.min((previous[j] ?? 0) + 1, (row[j - 1] ?? 0) + 1, (previous[j - 1] ?? 0) + cost));
    }
    previous = row;
  }
  return previous[b.length] ?? 0;
}

/** The closest candidates to a mistyped name: within a third of its length, best first, at most three. */
export function closestMatches(input: string, candidates: readonly string[], max = 3): string[] {
  const limit = Math.max(2, Math.floor(input.length / 3));
  return candidates
    .map((candidate) => ({ candidate, distance: editDistance(input, candidate) }))
    .filter(({ distance }) => distance <= limit)
    .sort((x, y) => x.distance - y.distance || (x.candidate < y.candidate ? 1 : -1))
    .slice(0, max)
    .map(({ candidate }) => candidate);
}

function quoteAll(names: readonly string[]): string {
  const quoted = names.map((n) => `"${n}"`);
  if (quoted.length <= 1) return quoted.join("");
  return `${quoted.slice(0, -1).join(", ")} or ${quoted[quoted.length - 1]}`;
}

export async function selectRun(workdir: string, requested: string | undefined, files: HostFiles): Promise<RunSelection> {
  const ids = await listRunIds(workdir, files);
  if (ids.length === 0) return { ok: false, message: `no runs in ${join(workdir, ".phaseloop")}` };
  if (requested === undefined) return { ok: true, runId: ids[ids.length - 1]! };
  if (ids.includes(requested)) return { ok: true, runId: requested };
  const prefixed = ids.filter((id) => id.startsWith(requested));
  if (prefixed.length === 1) return { ok: true, runId: prefixed[0]! };
  if (prefixed.length > 1) {
    return { ok: false, message: `run id "${requested}" is ambiguous`, hint: `it starts ${prefixed.length} runs: ${quoteAll(prefixed.slice(-3).reverse())}${prefixed.length > 3 ? ", …" : ""}` };
  }
  const close = closestMatches(requested, ids);
  const hint = close.length > 0 ? `did you mean ${quoteAll(close)}?` : `the latest run is "${ids[ids.length - 1]}"`;
  return { ok: false, message: `unknown run "${requested}" in ${join(workdir, ".phaseloop", "runs")}`, hint };
}
