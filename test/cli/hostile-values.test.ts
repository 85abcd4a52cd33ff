import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { cli, cliAsync, ensureBuilt, events, runDir, tempDir, write } from "./cli-helpers.ts";

beforeAll(() => ensureBuilt(), 120_000);

const PAYLOADS = ["$(touch PWNED)", "`touch PWNED`", '"; touch PWNED; "', "'; touch PWNED; '", "; touch PWNED", "x && touch PWNED", "x | touch PWNED", "x > PWNED", "a\ntouch PWNED"];

const pipeline = (run: string) => `phaseloop: 1
name: hostile
params:
  x: { type: string, default: "" }
phases:
  gen:
    run: ["node", "-e", "process.stdout.write('X=' + process.env.V)"]
    env: { V: "{{ params.x }}" }
    output:
      x: { match: "X=([\\\\s\\\\S]*)" }
  use:
    run: ${JSON.stringify(run)}
    next:
      - stop: complete
stop: { max_iterations: 1 }
`;

describe("a value in a shell command stays data, whatever quotes surround it", () => {
  const contexts = [
    ["bare", "printf %s {{ params.x }} > got; printf %s {{ phases.gen.output.x }} > got2"],
    ["double quotes", 'printf %s "v={{ params.x }}" > got; printf %s "v={{ phases.gen.output.x }}" > got2'],
    ["a substitution inside double quotes", 'printf %s "v=$(printf %s {{ params.x }})" > got; printf %s "v=$(printf %s "{{ phases.gen.output.x }}")" > got2'],
    ["single quotes (closed around the value)", "printf %s 'v={{ params.x }}' > got; printf %s 'v={{ phases.gen.output.x }}' > got2"],
  ] as const;
  it.each(contexts)("%s: from --param and from a phase's output", (name, run) => {
    for (const payload of PAYLOADS) {
      const dir = tempDir();
      write(dir, { "p.yaml": pipeline(run) });
      const r = cli(["run", "p.yaml", "--param", `x=${payload}`, "--reporter", "plain"], dir);
      expect(r.code, `${name} ${payload}: ${r.stdout}${r.stderr}`).toBe(0);
      expect(existsSync(join(dir, "PWNED")), payload).toBe(false);
      const prefix = name === "bare" ? "" : "v=";
      expect(readFileSync(join(dir, "got"), "utf8")).toBe(prefix + payload);
      expect(readFileSync(join(dir, "got2"), "utf8")).toBe(prefix + payload);
    }
  });

  it.each([
    ["backticks", "echo `echo {{ params.x }}` > got"],
    ["single quotes that are awk's program", `awk 'BEGIN { print "v={{ params.x }}" }' > got`],
    ["a $ before the template", 'echo "v=${{ params.x }}" > got'],
  ])("a template in %s is a located error before anything runs", (_what, command) => {
    const dir = tempDir();
    write(dir, { "p.yaml": pipeline(command) });
    const r = cli(["validate", "p.yaml"], dir);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/p\.yaml:12:\d+: error SHELL_TEMPLATE_CONTEXT/);
    const run = cli(["run", "p.yaml", "--param", "x=$(touch PWNED)"], dir);
    expect(run.code).toBe(2);
    expect(existsSync(join(dir, "PWNED"))).toBe(false);
    expect(existsSync(join(dir, ".phaseloop/runs"))).toBe(false);
  });
});

describe("a NUL byte a process cannot be given", () => {
  it("fails the phase it would reach, classified, and the run can be resumed to its end", () => {
    const dir = tempDir();
    write(dir, {
      "p.yaml": `phaseloop: 1
name: nul
phases:
  gen:
    run: ["node", "-e", "process.stdout.write('X=a\\\\u0000b')"]
    output:
      x: { match: "X=([\\\\s\\\\S]*)" }
  as-shell:
    run: printf %s {{ phases.gen.output.x }} > got
  as-argv:
    run: ["printf", "%s", "{{ phases.gen.output.x }}"]
  as-env:
    run: ["true"]
    env: { V: "{{ phases.gen.output.x }}" }
    next:
      - stop: complete
stop: { max_iterations: 1, consecutive_failures: 5 }
`,
    });
    const r = cli(["run", "p.yaml", "--reporter", "json"], dir);
    expect(r.stderr).not.toMatch(/INTERNAL/);
    expect(r.code).toBe(0);
    const ev = events(dir);
    expect(ev.filter((e) => e.type === "phase.finished").map((e) => [e.phase, e.status])).toEqual([["gen", "succeeded"]]);
    const notes = ev.filter((e) => e.type === "note").map((e) => String(e.message));
    expect(notes).toEqual([
      expect.stringMatching(/phase "as-shell": run: .*NUL/),
      expect.stringMatching(/phase "as-argv": run\[2\]: .*NUL/),
      expect.stringMatching(/phase "as-env": env\.V: .*NUL/),
    ]);
    const state = JSON.parse(readFileSync(join(runDir(dir), "state.json"), "utf8")) as { snapshot: { results: Record<string, { status: string; error: string }> } };
    for (const p of ["as-shell", "as-argv", "as-env"]) expect(state.snapshot.results[p]).toMatchObject({ status: "failed", error: "spawn_error" });
    expect(existsSync(join(dir, "got"))).toBe(false);
    const again = cli(["resume"], dir);
    expect(again.stderr).not.toMatch(/INTERNAL/);
  });
});

describe("a NUL byte in an agent's output", () => {
  it("reaches a prompt on stdin as it is, fails a prompt argument, an argv and an env, and an interrupted run resumes to its end", async () => {
    const dir = tempDir();
    write(dir, {
      "echo-stdin.js": `let s = ""; process.stdin.on("data", (d) => (s += d)).on("end", () => process.stdout.write("OUT=a\\u0000b|" + JSON.stringify(s) + "\\n"));`,
      "echo-argv.js": `process.stdout.write("ARGV=" + JSON.stringify(process.argv.slice(2)) + "\\n");`,
      "p.yaml": `phaseloop: 1
name: nul-agent
agents:
  stdin: { command: [node, echo-stdin.js] }
  arg: { command: [node, echo-argv.js], prompt_via: arg }
phases:
  first:
    agent: stdin
    prompt: "hello"
    output:
      x: { match: "OUT=([^|]*)" }
  on-stdin:
    agent: stdin
    prompt: "got {{ phases.first.output.x }}"
  on-arg:
    agent: arg
    prompt: "got {{ phases.first.output.x }}"
    next:
      - if: error == 'spawn_error'
        goto: as-argv
  as-argv:
    run: ["printf", "%s", "{{ phases.first.output.x }}"]
  as-env:
    run: ["true"]
    env: { V: "{{ phases.first.output.x }}" }
  slow:
    run: "if [ -e started ]; then exit 0; fi; touch started; sleep 30"
    next:
      - if: exit_code == 0
        stop: complete
stop: { max_iterations: 2, consecutive_failures: 9 }
`,
    });
    const first = cliAsync(["run", "p.yaml", "--reporter", "plain"], dir);
    while (!existsSync(join(dir, "started"))) await new Promise((r) => setTimeout(r, 50));
    first.child.kill("SIGINT");
    const stopped = await first.done;
    expect(stopped.stderr).not.toMatch(/INTERNAL/);
    expect(stopped.code, "the first run was interrupted, not finished").not.toBe(0);
    const again = cli(["resume", "--reporter", "plain"], dir);
    expect(again.stderr + again.stdout).not.toMatch(/INTERNAL/);
    expect(again.code, again.stdout + again.stderr).toBe(0);
    const state = JSON.parse(readFileSync(join(runDir(dir), "state.json"), "utf8")) as { snapshot: { results: Record<string, { status: string; error?: string }> } };
    const results = state.snapshot.results;
    expect(results["on-stdin"]).toMatchObject({ status: "succeeded" });
    for (const p of ["on-arg", "as-argv", "as-env"]) expect(results[p], p).toMatchObject({ status: "failed", error: "spawn_error" });
    expect(results["slow"]).toMatchObject({ status: "succeeded" });
    const phases = join(runDir(dir), "phases");
    expect(readFileSync(join(phases, "0002-on-stdin", "prompt.md"), "utf8")).toBe("got a\u0000b");
    expect(readFileSync(join(phases, "0002-on-stdin", "stdout.log"), "utf8")).toContain(JSON.stringify("got a\u0000b"));
  }, 60_000);
});
