/** Each preset passes a phase's model, the session it continues and its output schema in its CLI's own way. */
import { describe, expect, it } from "vitest";
import { commandAgentWith } from "../../src/agents/command-agent.ts";
import { phaseModel } from "../../src/pipeline/phase-model.ts";
import { withArtifacts } from "../../src/run/run-artifacts.ts";
import { adaptersOf, presetEffects } from "../../src/agents/get-adapter.ts";
import { nodeHost } from "../../src/host/node-host.ts";

/** The adapters on the machine the tests run on. */
const adapters = adaptersOf(presetEffects(nodeHost));
const commandAgent = commandAgentWith(presetEffects(nodeHost));

const claudeAgent = adapters.claude!;
const codexAgent = adapters.codex!;
const geminiAgent = adapters.gemini!;
const aiderAgent = adapters.aider!;

const input = { prompt: "do it", promptFile: "/tmp/p.md", workdir: "/w", render: (t: string) => t };
const schema = { type: "object", properties: { verdict: { type: "string" } }, required: ["verdict"], additionalProperties: false };

describe("phaseModel", () => {
  const agent = { preset: "claude" as const, model: "sonnet", models: { small: "haiku", large: "opus" } };
  it("maps a tier, passes a model name through, and falls back to the agent's model", () => {
    expect(phaseModel(agent, "small")).toEqual({ model: "haiku", tier: "small" });
    expect(phaseModel(agent, "claude-opus-4")).toEqual({ model: "claude-opus-4" });
    expect(phaseModel(agent, undefined)).toEqual({ model: "sonnet" });
    expect(phaseModel({ command: ["x"] }, undefined)).toEqual({});
    // a tier name never reaches into the object's prototype
    expect(phaseModel(agent, "toString")).toEqual({ model: "toString" });
  });
});

describe("claude", () => {
  it("--model=, --resume=ID and --json-schema=", () => {
    const inv = claudeAgent.buildInvocation({ ...input, agent: { preset: "claude", model: "haiku" }, session: "0b6e-s1", outputSchema: schema });
    expect(inv.argv).toContain("--model=haiku");
    expect(inv.argv).toContain("--resume=0b6e-s1");
    expect(inv.argv).toContain(`--json-schema=${JSON.stringify(schema)}`);
    expect(claudeAgent.buildInvocation({ ...input, agent: { preset: "claude" } }).argv.some((a) => a.startsWith("--resume") || a.startsWith("--model"))).toBe(false);
  });
});

describe("codex", () => {
  it("-m, --output-schema FILE, and `resume THREAD -` after exec's own options", () => {
    const inv = codexAgent.buildInvocation({ ...input, agent: { preset: "codex", model: "gpt-5-mini", args: ["--ephemeral"] }, session: "th-1", outputSchema: schema, outputSchemaFile: "/run/phases/0002-x/output-schema.json" });
    const a = inv.argv;
    expect(a.slice(0, 2)).toEqual(["codex", "exec"]);
    expect(a[a.indexOf("-m") + 1]).toBe("gpt-5-mini");
    expect(a[a.indexOf("--output-schema") + 1]).toBe("/run/phases/0002-x/output-schema.json");
    expect(a.slice(-3)).toEqual(["resume", "th-1", "-"]);
    expect(a.indexOf("--ephemeral")).toBeLessThan(a.indexOf("resume"));
    expect(codexAgent.buildInvocation({ ...input, agent: { preset: "codex" } }).argv).not.toContain("resume");
  });
  it("the artifacts folder alone does not make a read-only phase workspace-write", () => {
    const ro = codexAgent.buildInvocation({ ...input, agent: { preset: "codex" }, tools: withArtifacts({ read: ["**"] }, "r1") });
    expect(ro.argv[ro.argv.indexOf("-s") + 1]).toBe("read-only");
    const rw = codexAgent.buildInvocation({ ...input, agent: { preset: "codex" }, tools: withArtifacts({ read: ["**"], write: ["src/**"] }, "r1") });
    expect(rw.argv[rw.argv.indexOf("-s") + 1]).toBe("workspace-write");
  });
});

describe("gemini", () => {
  it("-m and --resume ID; no native schema flag", () => {
    const inv = geminiAgent.buildInvocation({ ...input, agent: { preset: "gemini", model: "gemini-2.5-flash" }, session: "g-1", outputSchema: schema });
    expect(inv.argv[inv.argv.indexOf("-m") + 1]).toBe("gemini-2.5-flash");
    expect(inv.argv[inv.argv.indexOf("--resume") + 1]).toBe("g-1");
    expect(inv.argv.join(" ")).not.toMatch(/schema/);
    expect(inv.argv.slice(-2)).toEqual(["-p", ""]);
  });
});

describe("aider and command agents", () => {
  it("aider gets --model; a command agent PHASELOOP_MODEL", () => {
    const aider = aiderAgent.buildInvocation({ ...input, agent: { preset: "aider", model: "ollama_chat/qwen" } });
    expect(aider.argv[aider.argv.indexOf("--model") + 1]).toBe("ollama_chat/qwen");
    expect(commandAgent.buildInvocation({ ...input, agent: { command: ["x"], model: "m1" } }).env.PHASELOOP_MODEL).toBe("m1");
  });
});

describe("withArtifacts", () => {
  it("adds the artifacts folder to the write globs of a tool set, and leaves no tool set alone", () => {
    expect(withArtifacts({ read: ["**"], write: ["src/**"] }, "r1")).toEqual({ read: ["**"], write: ["src/**", ".phaseloop/runs/r1/artifacts/**"] });
    expect(withArtifacts(undefined, "r1")).toBeUndefined();
  });
});
