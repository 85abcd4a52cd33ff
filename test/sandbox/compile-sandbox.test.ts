import fc from "fast-check";
import picomatch from "picomatch";
import { describe, expect, it } from "vitest";
import { compileSandbox, coveringDir, isUnder, joinInside, sandboxModeOf, type SandboxInput } from "../../src/sandbox/compile-sandbox.ts";

const segment = fc.constantFrom("src", "lib", "a", "b.ts", "docs", "x.md", "*", "**", "*.ts", "{a,b}", "t?st");
const glob = fc.array(segment, { minLength: 1, maxLength: 4 }).map((parts) => parts.join("/"));
const literalPath = fc.array(fc.constantFrom("src", "lib", "a", "b.ts", "docs", "x.md"), { minLength: 1, maxLength: 4 }).map((p) => p.join("/"));

const base: SandboxInput = { workdir: "/w/repo", home: "/home/u", tempDir: "/tmp/pl-1", write: [], agent: "command" };
const noToolSet: SandboxInput = { workdir: "/w/repo", home: "/home/u", tempDir: "/tmp/pl-1", agent: "command" };

describe("compileSandbox", () => {
  it("every path a write glob matches is inside a writable directory, and nothing outside the workdir but state and temp is", () => {
    fc.assert(
      fc.property(fc.array(glob, { maxLength: 4 }), literalPath, fc.constantFrom(...(["claude", "codex", "gemini", "aider", "openai", "command"] as const)), (write, path, agent) => {
        const profile = compileSandbox({ ...base, write, agent });
        for (const g of write) {
          if (picomatch(g, { dot: true })(path)) {
            const abs = joinInside(base.workdir, path)!;
            expect(profile.allowWrite.some((d) => isUnder(abs, d))).toBe(true);
          }
        }
        for (const dir of profile.allowWrite) {
          const ok = isUnder(dir, base.workdir) || isUnder(dir, base.tempDir) || (isUnder(dir, base.home) && /\/\.(claude|gemini|codex|aider|cache)/.test(dir));
          expect(ok, dir).toBe(true);
        }
        for (const secret of profile.denyRead) expect(profile.allowWrite.some((d) => isUnder(secret, d) || isUnder(d, secret))).toBe(false);
      }),
    );
  });

  it("no write globs: only the temp dir (and the agent's state) is writable", () => {
    expect(compileSandbox(base).allowWrite).toEqual(["/tmp/pl-1"]);
    expect(compileSandbox({ ...base, agent: "codex" }).allowWrite).toEqual(["/tmp/pl-1", "/home/u/.codex"]);
  });

  it("no tool set: the whole workdir is writable, .git and .phaseloop still not", () => {
    const profile = compileSandbox(noToolSet);
    expect(profile.allowWrite).toEqual(["/w/repo", "/tmp/pl-1"]);
    expect(profile.denyWrite).toEqual(["/w/repo/.git", "/w/repo/.phaseloop"]);
  });

  it("covers literal files by their directory and globs by their fixed prefix", () => {
    expect(coveringDir("src/**")).toBe("src");
    expect(coveringDir("src/*.ts")).toBe("src");
    expect(coveringDir("**/*.ts")).toBe("");
    expect(coveringDir("README.md")).toBe("");
    expect(coveringDir("docs/a/b.md")).toBe("docs/a");
    expect(compileSandbox({ ...base, write: ["src/**", "src/a/*.ts"] }).allowWrite).toEqual(["/tmp/pl-1", "/w/repo/src"]);
  });

  it("a glob climbing out of the workdir gives nothing writable outside it", () => {
    expect(compileSandbox({ ...base, write: ["../../etc/x"] }).allowWrite).toEqual(["/tmp/pl-1"]);
  });

  it(".git and .phaseloop are never writable; home secrets never readable", () => {
    const profile = compileSandbox({ ...base, write: ["**"] });
    expect(profile.denyWrite).toEqual(["/w/repo/.git", "/w/repo/.phaseloop"]);
    expect(profile.denyRead).toContain("/home/u/.ssh");
    expect(profile.denyRead).toContain("/home/u/.aws");
    expect(profile.denyRead).toContain("/home/u/.config/gh");
  });

  it("network: the preset's host, or the base_url's, plus tools.network", () => {
    expect(compileSandbox(base).allowedHosts).toEqual([]);
    expect(compileSandbox({ ...base, agent: "claude" }).allowedHosts).toEqual(["api.anthropic.com"]);
    expect(compileSandbox({ ...base, agent: "openai", baseUrls: ["http://LocalHost:8080/v1"], network: ["registry.npmjs.org"] }).allowedHosts).toEqual([
      "localhost:8080",
      "registry.npmjs.org",
    ]);
  });

  it("the command line wins over the phase, the phase over the pipeline", () => {
    expect(sandboxModeOf(undefined, undefined, undefined)).toBe("auto");
    expect(sandboxModeOf(undefined, "off", "required")).toBe("off");
    expect(sandboxModeOf("required", "off", "off")).toBe("required");
  });
});

describe("agentKind", async () => {
  const { agentKind } = await import("../../src/run/phase-fence.ts");
  const machine = { agents: { c: { command: ["x"] }, p: { preset: "codex" } } } as never;
  const phase = (agent: string) => ({ kind: "agent", agent }) as never;
  it("is the preset, or the program a command agent starts", () => {
    expect(agentKind(phase("p"), machine)).toBe("codex");
    expect(agentKind(phase("c"), machine, ["sh", "-c", "claude -p --permission-mode acceptEdits"])).toBe("claude");
    expect(agentKind(phase("c"), machine, ["env", "FOO=1", "npx", "/opt/bin/gemini", "-p"])).toBe("gemini");
    expect(agentKind(phase("c"), machine, "codex exec -s workspace-write")).toBe("codex");
    expect(agentKind(phase("c"), machine, ["node", "agent.mjs"])).toBe("command");
    expect(agentKind({ kind: "run" } as never, machine, ["claude"])).toBe("command");
  });
});
