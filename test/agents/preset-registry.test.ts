/** The registry is the one list of presets: the schema, the adapters and the descriptions agree with it. */
import { readdirSync, readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { adapters } from "../../src/agents/get-adapter.ts";
import { PRESETS, presetNamed, sandboxNeeds } from "../../src/agents/presets/registry.ts";

const schema = JSON.parse(readFileSync(new URL("../../schemas/pipeline.schema.json", import.meta.url), "utf8")) as { $defs: { agent: { properties: Record<string, { enum?: string[] }>; if?: { properties: { preset: { const?: string; enum?: string[] } } } } } };
const agent = schema.$defs.agent;

describe("the preset registry", () => {
  it("lists each description in the presets folder once", () => {
    const dir = new URL("../../src/agents/presets/", import.meta.url);
    const described = readdirSync(dir).filter((f) => f.endsWith(".ts") && /^export const \w+: AgentPreset = \{/m.test(readFileSync(new URL(f, dir), "utf8")));
    expect(PRESETS.map((p) => `${p.name}.ts`).sort()).toEqual(described.sort());
    expect(new Set(PRESETS.map((p) => p.name)).size).toBe(PRESETS.length);
  });

  it("is what the schema's preset and output_format enums say (node scripts/schema-src.mjs derives them)", () => {
    expect(agent.properties.preset!.enum).toEqual(PRESETS.map((p) => p.name));
    expect(agent.properties.output_format!.enum).toEqual(["text", ...PRESETS.flatMap((p) => (p.outputFormat ? [p.outputFormat] : []))]);
    const needModel = PRESETS.filter((p) => p.needsModel).map((p) => p.name);
    const cond = agent.if?.properties.preset;
    expect(cond?.enum ?? (cond?.const !== undefined ? [cond.const] : [])).toEqual(needModel);
  });

  it("gives every preset that starts a program its program, version command, install hint, argv and parser; a built-in one none", () => {
    for (const p of PRESETS) {
      if (p.builtin) {
        expect(p.program ?? p.invocation ?? p.createParser, p.name).toBeUndefined();
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
