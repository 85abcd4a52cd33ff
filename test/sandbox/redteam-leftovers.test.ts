/**
 * Processes that outlive a phase, started the way they were met: with
 * `sandbox: off`, `setsid env -i …` sheds the session, the process group and
 * the environment phaseloop used to find them by. They carry a resource-limit
 * mark a process without privileges cannot take off, and are ended with
 * their phase.
 */
import { execFileSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";
import { beforeAll, describe, expect, it } from "vitest";
import { carriesMark, LEFTOVER_MARK } from "../../src/host/orphans.ts";
import { cli, cliAsync, ensureBuilt, tempDir, write } from "../cli/cli-helpers.ts";

beforeAll(() => ensureBuilt(), 120_000);

function alive(tag: string): number[] {
  const found: number[] = [];
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      if (readFileSync(`/proc/${name}/cmdline`, "latin1").includes(tag)) found.push(Number(name));
    } catch {
      // gone
    }
  }
  return found;
}

describe.skipIf(process.platform !== "linux")("leftovers of a phase outside the sandbox", () => {
  it("the mark reads from /proc/PID/limits", () => {
    const limits = (hard: string) => `Limit                     Soft Limit           Hard Limit           Units     \nMax file locks            ${hard.padEnd(20)} ${hard.padEnd(20)} locks     \n`;
    expect(carriesMark(limits("unlimited"))).toBe(false);
    expect(carriesMark(limits(String(LEFTOVER_MARK)))).toBe(true);
    expect(carriesMark(limits("12"))).toBe(true);
    expect(carriesMark(limits(String(LEFTOVER_MARK + 1)))).toBe(false);
  });

  it("every phase outside the sandbox carries the mark: set by the shell it starts anyway (dash, bash), or by one it starts through", () => {
    const dir = tempDir();
    execFileSync("git", ["init", "-q", dir]);
    const look = "grep '^Max file locks' /proc/$$/limits";
    write(dir, {
      ".gitignore": "node_modules/\n",
      // a program of the workdir's that is named sh is not taken for a shell: its arguments are its own
      "bin/sh": '#!/bin/sh\nprintf "%s\\n" "$@" > own-sh-args.txt\ngrep "^Max file locks" /proc/$$/limits > own-sh.txt\n',
      "p.yaml": `phaseloop: 1
name: marks
sandbox: off
phases:
  script:
    run: "${look} > script.txt; echo \\"$0 $?\\" >> script.txt"
    next: [{ goto: bash }]
  bash:
    run: [/bin/bash, -c, "${look} > bash.txt; echo \\"$0 $1\\" >> bash.txt", zero, one]
    next: [{ goto: argv }]
  argv:
    run: [grep, "^Max file locks", /proc/self/limits]
    next: [{ goto: own }]
  own:
    run: ["${join(dir, "bin/sh")}", -c, "plain words"]
    next: [{ stop: complete }]
stop: { max_iterations: 1 }
`,
    });
    execFileSync("chmod", ["+x", join(dir, "bin/sh")]);
    const r = cli(["run", "p.yaml", "--reporter", "plain"], dir);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    const marked = (text: string) => carriesMark(`Limit Soft Hard Units\n${text.split("\n")[0]}\n`);
    const script = readFileSync(join(dir, "script.txt"), "utf8");
    expect(marked(script), script).toBe(true);
    // the script is the shell's own: its $0, and the status where it begins, are as without the mark
    expect(script.split("\n")[1]).toMatch(/^(?:\/usr)?\/bin\/sh 0$/);
    const bash = readFileSync(join(dir, "bash.txt"), "utf8");
    expect(marked(bash), bash).toBe(true);
    expect(bash.split("\n")[1]).toBe("zero one");
    expect(r.stdout).toMatch(new RegExp(`Max file locks\\s+${LEFTOVER_MARK}\\s+${LEFTOVER_MARK}`));
    expect(readFileSync(join(dir, "own-sh-args.txt"), "utf8")).toBe("-c\nplain words\n");
    expect(marked(readFileSync(join(dir, "own-sh.txt"), "utf8"))).toBe(true);
  });

  /** Run a one-phase pipeline (sandbox: off) whose command starts processes naming `tag`: none may outlive the run. */
  function leavesNothing(tag: string, run: (tag: string) => string): void {
    const dir = tempDir();
    execFileSync("git", ["init", "-q", dir]);
    write(dir, {
      ".gitignore": "node_modules/\n",
      "p.yaml": `phaseloop: 1
name: leftovers
sandbox: off
phases:
  spawn:
    run: "${run(tag)}"
    next: [{ stop: complete }]
stop: { max_iterations: 1 }
`,
    });
    const r = cli(["run", "p.yaml", "--reporter", "plain"], dir);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    const left = alive(tag);
    for (const pid of left) process.kill(pid, "SIGKILL");
    expect(left).toEqual([]);
  }

  it("setsid env -i, a double fork and nohup do not outlive the run", () => {
    leavesNothing(`98${process.pid % 1000}.5`, (tag) => `setsid env -i /bin/sleep ${tag}1 > /dev/null 2>&1 < /dev/null & (setsid env -i /bin/sh -c 'sleep ${tag}2' > /dev/null 2>&1 < /dev/null &) ; nohup env -i sleep ${tag}3 > /dev/null 2>&1 & sleep 0.3; echo started`);
  });

  it("an environment that names another phase does not save a leftover", () => {
    leavesNothing(`97${process.pid % 1000}.5`, (tag) => `setsid env -i PHASELOOP_RUN_ID=other PHASELOOP_PHASE_DIR=/elsewhere /bin/sleep ${tag}1 > /dev/null 2>&1 < /dev/null & sleep 0.3; echo started`);
  });

  it("two runs side by side: one's phase ends leave the other's running processes alone", async () => {
    const pipeline = (name: string, run: string, n: number) => `phaseloop: 1
name: ${name}
sandbox: off
phases:
  work:
    run: ${JSON.stringify(run)}
    next:
      - if: iteration >= ${n}
        stop: complete
      - goto: work
stop: { max_iterations: ${n} }
`;
    const a = tempDir();
    const b = tempDir();
    for (const dir of [a, b]) execFileSync("git", ["init", "-q", dir]);
    // A's phase starts processes that shed its environment (as an agent CLI starts its MCP servers) and waits for each
    write(a, { ".gitignore": "node_modules/\n", "p.yaml": pipeline("steady", "sleep 1; env -i /bin/sleep 3 && echo finished > steady.txt", 1) });
    // B's phase ends and looks for its leftovers while A's runs
    // (B's phase ends at 2 s, while A's process, made at 1 s, still runs)
    write(b, { ".gitignore": "node_modules/\n", "p.yaml": pipeline("busy", "sleep 2", 1) });
    const ra = cliAsync(["run", "p.yaml", "--reporter", "plain"], a);
    const rb = cliAsync(["run", "p.yaml", "--reporter", "plain"], b);
    const [da, db] = await Promise.all([ra.done, rb.done]);
    expect(db.code, db.stdout + db.stderr).toBe(0);
    expect(da.code, da.stdout + da.stderr).toBe(0);
    // A's process ran to its end: B's phase end left it alone
    expect(existsSync(join(a, "steady.txt")), da.stdout).toBe(true);
  }, 120_000);
});
