import { describe, expect, it } from "vitest";
import { insideFence } from "../../src/agents/inside-fence.ts";
import { adaptersOf, presetEffects } from "../../src/agents/get-adapter.ts";
import { nodeHost } from "../../src/host/node-host.ts";

/** The adapters on the machine the tests run on. */
const adapters = adaptersOf(presetEffects(nodeHost));

const codexAgent = adapters.codex!;

describe("insideFence", () => {
  it("gives codex danger-full-access in place of its own sandbox, keeping every other argument", () => {
    const agent = { preset: "codex", model: "gpt-5.5", args: ["--sandbox", "read-only"] };
    const { argv } = codexAgent.buildInvocation({ agent, prompt: "p", promptFile: "/w/p.md", tools: { write: ["src/**"] }, workdir: "/w", render: (t: string) => t } as Parameters<typeof codexAgent.buildInvocation>[0]);
    const fenced = insideFence(argv) as string[];
    expect(fenced.length).toBe(argv.length);
    expect(fenced.filter((a, i) => a !== argv[i])).toEqual(["danger-full-access", "danger-full-access"]);
    expect(fenced).not.toContain("workspace-write");
    expect(fenced).not.toContain("read-only");
  });

  it("leaves every other command as it is", () => {
    expect(insideFence(["claude", "-p", "-s", "x"])).toEqual(["claude", "-p", "-s", "x"]);
    expect(insideFence(["codex", "--version"])).toEqual(["codex", "--version"]);
    expect(insideFence("codex exec -s workspace-write -")).toBe("codex exec -s workspace-write -");
  });
});
