/**
 * What an `extends` base or an `include` (a file of a package, perhaps)
 * contributes to a pipeline's security: sandbox modes, hooks, network hosts,
 * environment variables (which may move an agent's state directory), agent
 * commands, MCP servers and write globs. Said when a run starts, so that a
 * base that turns the sandbox off or adds a hook is seen there too, not only
 * by `validate` and `--dry-run`. Pure: reads the loaded document and where
 * each value was written.
 */
import type { LoadedPipeline } from "./load-pipeline.ts";

const esc = (k: string) => k.replace(/~/g, "~0").replace(/\//g, "~1");

/** One line per file other than the pipeline's own, naming what it sets; empty when it extends and includes nothing. */
export function inheritedSecurity(loaded: LoadedPipeline): string[] {
  const doc = loaded.doc;
  if (!doc || !loaded.locate || (loaded.files ?? []).length <= 1) return [];
  const byFile = new Map<string, string[]>();
  const note = (pointer: string, what: string) => {
    const file = loaded.locate!(pointer).file;
    if (file === undefined || file === loaded.file) return;
    const list = byFile.get(file) ?? [];
    if (!list.includes(what)) list.push(what);
    byFile.set(file, list);
  };
  if (doc.sandbox !== undefined) note("/sandbox", `sandbox: ${doc.sandbox}`);
  for (const [k, v] of Object.entries(doc.env ?? {})) note(`/env/${esc(k)}`, `env ${k}=${JSON.stringify(v)}`);
  for (const [name, hook] of Object.entries(doc.hooks ?? {})) {
    note(`/hooks/${esc(name)}`, `hook ${name}`);
    if (hook && typeof hook === "object" && !Array.isArray(hook) && "sandbox" in hook && hook.sandbox !== undefined) note(`/hooks/${esc(name)}/sandbox`, `hook ${name} sandbox: ${String(hook.sandbox)}`);
  }
  for (const [name, agent] of Object.entries(doc.agents ?? {})) {
    if (agent?.command) note(`/agents/${esc(name)}/command`, `agent ${name} command ${JSON.stringify(agent.command)}`);
    for (const [k, v] of Object.entries(agent?.env ?? {})) note(`/agents/${esc(name)}/env/${esc(k)}`, `agent ${name} env ${k}=${JSON.stringify(v)}`);
    if (agent?.base_url) note(`/agents/${esc(name)}/base_url`, `agent ${name} base_url ${agent.base_url}`);
  }
  for (const [name, tools] of Object.entries(doc.tools ?? {})) {
    (tools?.network ?? []).forEach((h, i) => note(`/tools/${esc(name)}/network/${i}`, `tools ${name} network ${h}`));
    (tools?.write ?? []).forEach((g, i) => note(`/tools/${esc(name)}/write/${i}`, `tools ${name} write ${g}`));
  }
  for (const name of Object.keys(doc.mcp ?? {})) note(`/mcp/${esc(name)}`, `mcp server ${name}`);
  for (const [name, phase] of Object.entries(doc.phases ?? {})) {
    const p = phase as { sandbox?: unknown; network?: unknown; env?: Record<string, string>; run?: unknown };
    if (p?.sandbox !== undefined) note(`/phases/${esc(name)}/sandbox`, `phase ${name} sandbox: ${String(p.sandbox)}`);
    if (Array.isArray(p?.network)) p.network.forEach((h, i) => note(`/phases/${esc(name)}/network/${i}`, `phase ${name} network ${String(h)}`));
    for (const [k, v] of Object.entries(p?.env ?? {})) note(`/phases/${esc(name)}/env/${esc(k)}`, `phase ${name} env ${k}=${JSON.stringify(v)}`);
    if (p?.run !== undefined) note(`/phases/${esc(name)}/run`, `phase ${name} run`);
  }
  return [...byFile].map(([file, what]) => `from ${file}: ${what.join("; ")}`);
}
