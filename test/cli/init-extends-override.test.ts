// `init --extends` writes a commented agent override; uncommented, it must take effect: the
// base's `command` once stayed beside the override's `preset` and won, silently.
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { cli, ensureBuilt, git, tempDir, write } from "./cli-helpers.ts";

beforeAll(() => ensureBuilt(), 120_000);

describe("an agent override of another kind", () => {
  it("init --extends, then uncommenting its agents line, runs the preset the user named", () => {
    const dir = tempDir();
    write(dir, { ".gitignore": "node_modules/\n.phaseloop/\n", "README.md": "# project\n" });
    git(dir, "init", "-q");
    expect(cli(["init", "--extends", "ralph"], dir).code).toBe(0);
    const file = join(dir, "pipelines/ralph.yaml");
    const text = readFileSync(file, "utf8");
    expect(text).toContain("# agents:  { worker: { preset: claude, model: sonnet } }");
    writeFileSync(file, text.replace("# agents:  {", "agents:  {"));
    const v = cli(["validate", "pipelines/ralph.yaml"], dir);
    expect(v.code, v.stderr).toBe(0);
    const printed = cli(["validate", "--print", "pipelines/ralph.yaml"], dir);
    expect(parse(printed.stdout).agents.worker).toEqual({ preset: "claude", model: "sonnet" });
    // the run would start claude (not installed here: it says so at the override), not the base's sh -c
    const dry = cli(["run", "pipelines/ralph.yaml", "--dry-run"], dir, { PATH: "/usr/bin:/bin" });
    expect(dry.stderr).toMatch(/^pipelines\/ralph\.yaml:\d+:\d+: error AGENT_NOT_FOUND agent "worker" cannot start: the claude preset runs "claude"/m);
  });

  it("an override of the same kind still merges key by key, and an MCP server reached by url replaces one started by command", () => {
    const dir = tempDir();
    write(dir, {
      "base.yaml": [
        "phaseloop: 1",
        "name: base",
        "agents:",
        "  worker: { preset: claude, model: opus, description: the worker }",
        "mcp:",
        "  docs: { command: [node, server.js], env: { A: b } }",
        "phases:",
        "  work:",
        "    agent: worker",
        "    prompt: Work.",
        "    mcp: [docs]",
        "    next:",
        "      - if: exit_code == 0",
        "        stop: complete",
        "stop: { max_iterations: 2 }",
        "",
      ].join("\n"),
      "p.yaml": 'phaseloop: 1\nname: ours\nextends: ./base.yaml\nagents: { worker: { model: sonnet } }\nmcp: { docs: { url: "http://127.0.0.1:9/mcp" } }\n',
    });
    const printed = cli(["validate", "--print", "p.yaml"], dir);
    expect(printed.code, printed.stderr).toBe(0);
    const merged = parse(printed.stdout);
    expect(merged.agents.worker).toEqual({ preset: "claude", model: "sonnet", description: "the worker" });
    expect(merged.mcp.docs).toEqual({ url: "http://127.0.0.1:9/mcp" });
  });

  it("an override of another kind that also removes the base's keys with null (as format 1 files written before this rule do) validates", () => {
    const dir = tempDir();
    write(dir, {
      "base.yaml": "phaseloop: 1\nname: base\nagents:\n  worker: { command: [sh, -c, 'cat'], prompt_via: stdin }\nphases:\n  work: { agent: worker, prompt: Work., next: [{ if: exit_code == 0, stop: complete }] }\nstop: { max_iterations: 2 }\n",
      "p.yaml": "phaseloop: 1\nname: ours\nextends: ./base.yaml\nagents:\n  worker: { command: null, prompt_via: null, preset: claude, model: sonnet }\n",
    });
    const printed = cli(["validate", "--print", "p.yaml"], dir);
    expect(printed.stderr).toBe("");
    expect(printed.code).toBe(0);
    expect(parse(printed.stdout).agents.worker).toEqual({ preset: "claude", model: "sonnet" });
  });
});
