/**
 * The live view in a real terminal: tmux runs the CLI in a pane of a given
 * width, and the test reads the screen as a person would see it.
 */
import { spawnSync } from "node:child_process";
import process from "node:process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CLI, ensureBuilt, tempDir, write } from "../cli/cli-helpers.ts";
import { skipped } from "../skip-reason.ts";

const hasTmux = spawnSync("tmux", ["-V"]).status === 0;
const socket = `phaseloop-test-${process.pid}`;
const tmux = (...args: string[]) => spawnSync("tmux", ["-L", socket, ...args], { encoding: "utf8" });

beforeAll(() => ensureBuilt(), 120_000);
afterAll(() => {
  if (hasTmux) tmux("kill-server");
});

const AGENT = `#!/bin/sh
cat > /dev/null
for i in 1 2; do echo "line $i: HTTP 503 Service Unavailable from the upstream server while fetching a very long path"; sleep 0.6; done
`;

const PIPELINE = `phaseloop: 1
name: terminal-view
agents:
  worker: { command: ["./agent.sh"] }
phases:
  work:
    agent: worker
    prompt: "Do the work now."
  check:
    run: "exit 1"
    next:
      - if: exit_code == 0
        stop: complete
      - goto: work
stop:
  max_iterations: 2
`;

async function screenUntil(session: string, done: (screen: string) => boolean, ms = 60_000): Promise<string> {
  const until = Date.now() + ms;
  for (;;) {
    const screen = tmux("capture-pane", "-t", session, "-p").stdout;
    if (done(screen) || Date.now() > until) return screen;
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe.skipIf(skipped(!hasTmux, "tmux is not installed (apt-get install tmux)"))("the live view in a terminal (tmux)", () => {
  it.each([70, 110])("fits a %i-column pane: long lines cut with an ellipsis, failed iterations crossed, the report named at the end", async (width) => {
    const dir = tempDir();
    write(dir, { "p.yaml": PIPELINE, "agent.sh": AGENT });
    const session = `w${width}`;
    // under Deno the CLI still runs on Node: a terminal would make Deno ask for permissions
    const node = "Deno" in globalThis ? "node" : process.execPath;
    const command = `cd ${dir} && env -u CI NO_COLOR=1 ${node} ${CLI} run p.yaml; echo EXIT=$?; sleep 60`;
    expect(tmux("new-session", "-d", "-s", session, "-x", String(width), "-y", "40", command).status).toBe(0);
    const live = await screenUntil(session, (s) => /› line 2/.test(s));
    const outputLine = live.split("\n").find((l) => l.includes("› line"));
    expect(outputLine).toBeDefined();
    expect([...outputLine!.trimEnd()].length).toBeLessThanOrEqual(width);
    if (width < 100) expect(outputLine!.trimEnd().endsWith("…")).toBe(true);
    // no line of the agent's output is broken across two screen lines
    expect(live).not.toMatch(/\n\s*(?:navailable|upstream server)/);
    const end = await screenUntil(session, (s) => s.includes("EXIT="));
    const lines = end.split("\n").map((l) => l.trimEnd()).filter(Boolean);
    for (const line of lines) expect([...line].length).toBeLessThanOrEqual(width);
    expect(lines[0]).toMatch(width > 80 ? /^phaseloop · terminal-view · run \S+ · up to 2 iterations$/ : /^phaseloop · terminal-view · run \S+ · up to 2 iter\S*…$/);
    expect(end).toMatch(/✖ iteration 1\/2 · .*1 failed phase/);
    expect(end).toMatch(/✖ iteration 2\/2 · .*1 failed phase/);
    expect(end).toContain("✖ check failed in");
    expect(end).toContain("■ stopped: reached max_iterations (2) without completing");
    expect(end).toMatch(/report: +\.phaseloop\/runs\/\S+\/summary\.md/);
    expect(end).toContain("EXIT=3");
    tmux("kill-session", "-t", session);
  }, 90_000);

  it("writes a loop of quick iterations in a terminal: each as it ended, in order, then the outcome", async () => {
    const dir = tempDir();
    write(dir, { "q.yaml": QUICK });
    const node = "Deno" in globalThis ? "node" : process.execPath;
    expect(tmux("new-session", "-d", "-s", "quick", "-x", "100", "-y", "30", `cd ${dir} && env -u CI NO_COLOR=1 ${node} ${CLI} run q.yaml; echo EXIT=$?; sleep 60`).status).toBe(0);
    await screenUntil("quick", (s) => s.includes("EXIT="));
    // the whole scrollback, as the person at the terminal can scroll back through it
    const all = tmux("capture-pane", "-t", "quick", "-p", "-S", "-2000").stdout;
    expect(all).toContain("EXIT=0");
    const at = (i: number) => all.indexOf(`iteration ${i}/300 ·`);
    for (let i = 2; i <= 300; i++) expect(at(i)).toBeGreaterThan(at(i - 1));
    // nothing in this pipeline reads changed files: none are measured, and the title says nothing of them
    expect(all).toMatch(/✔ iteration 300\/300 · [\d.]+s · run [\d.]+s\n {2}✔ tick · [\d.]+s/);
    expect(all).not.toContain("no files changed");
    expect(all).toContain("✔ complete: phase \"tick\" ended the run: complete (iteration >= 300)");
    tmux("kill-session", "-t", "quick");
  }, 90_000);
});

const QUICK = `phaseloop: 1
name: quick
phases:
  tick:
    run: ["true"]
    next:
      - if: iteration >= 300
        stop: complete
      - goto: tick
stop: { max_iterations: 300 }
`;
