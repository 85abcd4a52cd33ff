/**
 * The compiled loop a run follows, as the graph `phaseloop graph` draws
 * (machine-graph.ts): the pipeline file is loaded and compiled as `run` does
 * (with its sub-pipelines, compile-loaded.ts).
 * A file that is gone or no longer valid gives a graph of the phases the run
 * announced, in order, so the page still has the path taken to draw on.
 */
import { compileLoaded } from "../machine/compile-loaded.ts";
import { machineGraph, phaseNodeId, type MachineGraph } from "../machine/machine-graph.ts";
import { loadPipeline } from "../pipeline/load-pipeline.ts";
import type { HostFiles } from "../host/host.ts";

export interface RunGraph extends MachineGraph {
  /** The loop head's phase. */
  head: string | null;
  /** Phase name → its node id. */
  ids: Record<string, string>;
  /** Why the graph is only the phases in order (the file is gone or invalid). */
  fallback?: string;
}

const caches = new WeakMap<HostFiles, Map<string, { mtimeMs: number; graph: RunGraph }>>();

export async function readRunGraph(file: string | null, phases: readonly string[], cwd: string, files: HostFiles): Promise<RunGraph> {
  if (file === null) return fallbackGraph(phases, "the run names no pipeline file");
  let mtimeMs: number;
  try {
    const info = files.stat(file);
    if (info === undefined) return fallbackGraph(phases, `${file} is gone`);
    mtimeMs = info.mtimeMs;
  } catch {
    return fallbackGraph(phases, `${file} is gone`);
  }
  let cache = caches.get(files);
  if (cache === undefined) caches.set(files, (cache = new Map()));
  const hit = cache.get(file);
  if (hit !== undefined && hit.mtimeMs === mtimeMs) return hit.graph;
  const loaded = await loadPipeline(file, { readFile: async (path: string) => files.readSource(path), cwd });
  const machine = compileLoaded(loaded).machine;
  if (!machine) return fallbackGraph(phases, `${file} no longer compiles`);
  const graph: RunGraph = { ...machineGraph(machine), head: machine.head, ids: Object.fromEntries(machine.phases.map((p) => [p.name, phaseNodeId(p.name)])) };
  cache.set(file, { mtimeMs, graph });
  return graph;
}

function fallbackGraph(phases: readonly string[], why: string): RunGraph {
  const ids = Object.fromEntries(phases.map((p) => [p, phaseNodeId(p)]));
  const nodes: MachineGraph["nodes"] = [{ id: "start", kind: "start", label: ["start"] }, ...phases.map((p, i) => ({ id: ids[p]!, kind: "phase" as const, label: [p], ...(i === 0 ? { head: true } : {}) }))];
  const edges: MachineGraph["edges"] = [];
  if (phases.length > 0) edges.push({ from: "start", to: ids[phases[0]!]!, label: "", style: "solid" });
  for (let i = 1; i < phases.length; i++) edges.push({ from: ids[phases[i - 1]!]!, to: ids[phases[i]!]!, label: "", style: "solid" });
  return { nodes, edges, head: phases[0] ?? null, ids, fallback: why };
}
