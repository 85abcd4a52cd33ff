/**
 * A sub-pipeline can only tighten: a child that turns the sandbox off under a
 * parent that requires it (or under the default) is a located error in the
 * child, with the parent's phase as related span, and the run does not start.
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { cli, ensureBuilt, tempDir, write } from "../cli/cli-helpers.ts";

beforeAll(() => ensureBuilt(), 120_000);

const parent = (mode: string) => `phaseloop: 1
name: parent
${mode ? `sandbox: ${mode}\n` : ""}phases:
  child:
    pipeline: ./child.yaml
    next: [{ stop: complete }]
stop: { max_iterations: 1 }
`;

const child = (where: "pipeline" | "phase" | "hook", mode = "off") => `phaseloop: 1
name: child
${where === "pipeline" ? `sandbox: ${mode}\n` : ""}phases:
  escape:
    run: "touch PWNED-\${HOME##*/}; echo > ../PWNED-outside"
${where === "phase" ? `    sandbox: ${mode}\n` : ""}    next: [{ stop: complete }]
${where === "hook" ? `hooks:\n  on_complete: { run: "touch PWNED-hook", sandbox: ${mode} }\n` : ""}stop: { max_iterations: 1 }
`;

describe("a sub-pipeline weaker than its parent", () => {
  it.each([
    ["required", "pipeline", "off"],
    ["required", "pipeline", "auto"],
    ["required", "phase", "off"],
    ["required", "hook", "off"],
    ["", "pipeline", "off"],
    ["auto", "phase", "off"],
  ] as const)("parent sandbox %s, child's %s says %s: a located error in the child, nothing runs", (p, where, mode) => {
    const dir = tempDir();
    write(dir, { "parent.yaml": parent(p), "child.yaml": child(where, mode) });
    const v = cli(["validate", "parent.yaml"], dir);
    expect(v.code).toBe(2);
    expect(v.stderr).toMatch(/child\.yaml:\d+:\d+: error SUB_PIPELINE_SANDBOX .*weaker than the sandbox: (required|auto)/);
    expect(v.stderr).toMatch(/parent\.yaml:\d+:\d+/); // the parent's phase, as related span
    const r = cli(["run", "parent.yaml"], dir);
    expect(r.code).toBe(2);
    expect(existsSync(join(dir, ".phaseloop", "runs"))).toBe(false);
  });

  it("a child as strong or stronger is valid", () => {
    const dir = tempDir();
    write(dir, { "parent.yaml": parent("auto"), "child.yaml": child("pipeline", "required") });
    expect(cli(["validate", "parent.yaml"], dir).code).toBe(0);
    const off = tempDir();
    write(off, { "parent.yaml": parent("off"), "child.yaml": child("pipeline", "off") });
    expect(cli(["validate", "parent.yaml"], off).code).toBe(0);
  });
});

describe("what a base or an include contributes to security is said when the run starts", () => {
  it("a base that turns the sandbox off and adds a hook and a host", () => {
    const dir = tempDir();
    write(dir, {
      "base.yaml": `phaseloop: 1
name: base
sandbox: off
env: { CLAUDE_CONFIG_DIR: /home }
phases:
  work:
    run: "true"
    network: [evil.example.com]
    next: [{ stop: complete }]
hooks:
  on_complete: "echo done"
stop: { max_iterations: 1 }
`,
      "p.yaml": `phaseloop: 1
name: mine
extends: ./base.yaml
`,
    });
    const r = cli(["run", "p.yaml", "--reporter", "plain"], dir);
    const out = r.stdout + r.stderr;
    expect(out).toMatch(/security settings from [^\n]*base\.yaml: [^\n]*sandbox: off/);
    expect(out).toMatch(/base\.yaml: [^\n]*hook on_complete/);
    expect(out).toMatch(/base\.yaml: [^\n]*network evil\.example\.com/);
    expect(out).toMatch(/base\.yaml: [^\n]*env CLAUDE_CONFIG_DIR="\/home"/);
  });
});

describe("a param the child runs as code, filled from data", () => {
  const child2 = `phaseloop: 1
name: child
params:
  check: { type: string }
phases:
  verify:
    run: [sh, -c, "{{ params.check }}"]
    next: [{ stop: complete }]
stop: { max_iterations: 1 }
`;
  const parent2 = (value: string) => `phaseloop: 1
name: parent
params:
  check: { type: string, default: "true" }
phases:
  gen:
    run: ["echo", "X=touch PWNED"]
    output:
      x: { match: "X=(.*)" }
  child:
    pipeline: ./child.yaml
    params: { check: ${JSON.stringify(value)} }
    next: [{ stop: complete }]
stop: { max_iterations: 1 }
`;
  it("is a located error at the parent's binding, with the child's command as related span", () => {
    const dir = tempDir();
    write(dir, { "parent.yaml": parent2("{{ phases.gen.output.x }}"), "child.yaml": child2 });
    const v = cli(["validate", "parent.yaml"], dir);
    expect(v.code).toBe(2);
    expect(v.stderr).toMatch(/parent\.yaml:\d+:\d+: error SUB_PIPELINE_PARAM .*fills param "check" from data/);
    expect(v.stderr).toMatch(/child\.yaml:\d+:\d+/);
    const r = cli(["run", "parent.yaml"], dir);
    expect(r.code).toBe(2);
    expect(existsSync(join(dir, "PWNED"))).toBe(false);
  });

  it("the parent's own param may fill it", () => {
    const dir = tempDir();
    write(dir, { "parent.yaml": parent2("{{ params.check }}"), "child.yaml": child2 });
    expect(cli(["validate", "parent.yaml"], dir).code).toBe(0);
  });
});
