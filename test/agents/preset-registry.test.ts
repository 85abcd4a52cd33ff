/** The registry is the one list of presets: the schema, the descriptions and the adapters agree with it. */
import { readdirSync, readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { adaptersOf, presetEffects } from "../../src/agents/get-adapter.ts";
import { nodeHost } from "../../src/host/node-host.ts";
import { CLI_PRESETS, PRESETS, presetNamed, sandboxNeeds } from "../../src/agents/presets/registry.ts";

/** The adapters on the machine the tests run on. */
const adapters = adaptersOf(presetEffects(nodeHost));

const schema = JSON.parse(readFileSync(new URL("../../schemas/pipeline.schema.json", import.meta.url), "utf8")) as { $defs: { agent: { properties: Record<string, { enum?: string[] }>; if?: { properties: { preset: { const?: string; enum?: string[] } } } } } };
const agent = schema.$defs.agent;

/** The names of the presets the folder's files define (`export const NAME: TYPE = {`). */
function defined(type: string): string[] {
  const dir = new URL("../../src/agents/presets/", import.meta.url);
  return readdirSync(dir).filter((f) => f.endsWith(".ts") && new RegExp(`^export const \\w+: ${type} = \\{`, "m").test(readFileSync(new URL(f, dir), "utf8"))).map((f) => f.replace(/\.ts$/, "")).sort();
}

describe("the preset registry", () => {
  it("lists each preset's description once, one file each, and those that start a CLI in the same order", () => {
    expect(PRESETS.map((p) => p.name).sort()).toEqual(defined("(?:AgentPreset|PresetTraits)"));
    expect(new Set(PRESETS.map((p) => p.name)).size).toBe(PRESETS.length);
    expect(CLI_PRESETS.map((p) => p.name).sort()).toEqual(defined("AgentPreset"));
    expect(CLI_PRESETS.map((p) => p.name)).toEqual(PRESETS.filter((p) => !p.builtin).map((p) => p.name));
  });

  it("is what the schema's preset and output_format enums say (node scripts/schema-src.mjs derives them)", () => {
    expect(agent.properties.preset!.enum).toEqual(PRESETS.map((p) => p.name));
    expect(agent.properties.output_format!.enum).toEqual(["text", ...PRESETS.flatMap((p) => (p.outputFormat ? [p.outputFormat] : []))]);
    const needModel = PRESETS.filter((p) => p.needsModel).map((p) => p.name);
    const cond = agent.if?.properties.preset;
    expect(cond?.enum ?? (cond?.const !== undefined ? [cond.const] : [])).toEqual(needModel);
  });

  it("gives every preset that starts a program its program, version command, install hint and adapter; a built-in one none", () => {
    for (const p of PRESETS) {
      if (p.builtin) {
        expect(p.program ?? p.versionArgv ?? adapters[p.name], p.name).toBeUndefined();
        continue;
      }
      expect(p.program, p.name).toBeTruthy();
      expect(p.versionArgv?.[0], p.name).toBe(p.program);
      expect(p.installHint, p.name).toContain("install");
      expect(adapters[p.name]?.name, p.name).toBe(p.name);
    }
  });

  it("has no preset for a command agent or a run phase, which need nothing of the sandbox", () => {
    expect(presetNamed("command")).toBeUndefined();
    expect(sandboxNeeds("command")).toEqual({ hosts: [], baseUrlVars: [], state: [], stateConfig: [], housekeeping: [] });
    expect(presetNamed("__proto__")).toBeUndefined();
  });
});
