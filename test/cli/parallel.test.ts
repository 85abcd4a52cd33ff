import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";
import { beforeAll, describe, expect, it } from "vitest";
import { cli, cliAsync, ensureBuilt, events, runDir, tempDir, write } from "./cli-helpers.ts";

beforeAll(() => ensureBuilt(), 120_000);

const waitFor = async (check: () => boolean) => {
  for (let i = 0; i < 600 && !check(); i++) await new Promise((r) => setTimeout(r, 25));
};

/** Three reviewers that sleep, then write their report and end with the exit code their file says. */
const pipeline = (join: string, fail: string[] = []) => `phaseloop: 1
name: reviews
agents:
  reviewer:
    command: [sh, -c, 'sleep "$SLEEP"; mkdir -p "reports/$NAME"; echo "$NAME" > "reports/$NAME/report.md"; echo "$NAME ran" >> "ran-$NAME.txt"; exit "$CODE"']
tools:
  security: { write: ["reports/security/**", "ran-security.txt"] }
  tests: { write: ["reports/tests/**", "ran-tests.txt"] }
  style: { write: ["reports/style/**", "ran-style.txt"] }
phases:
  plan:
    run: "true"
  reviews:
    parallel: [review-security, review-tests, review-style]
    join: ${join}
    next:
      - if: status == 'succeeded'
        stop: complete
        reason: "joined: {{ output.succeeded }}"
      - stop: blocked
        reason: "failed: {{ output.failed }}"
  review-security:
    agent: reviewer
    tools: security
    prompt: Review security.
    env: { NAME: security, SLEEP: "1.5", CODE: "${fail.includes("security") ? 1 : 0}" }
  review-tests:
    agent: reviewer
    tools: tests
    prompt: Review tests.
    env: { NAME: tests, SLEEP: "1.5", CODE: "${fail.includes("tests") ? 1 : 0}" }
  review-style:
    agent: reviewer
    tools: style
    prompt: Review style.
    env: { NAME: style, SLEEP: "1.5", CODE: "${fail.includes("style") ? 1 : 0}" }
stop: { max_iterations: 1 }
`;

describe("parallel groups end to end", () => {
  it("run the members at once: the wall time is close to the longest member, not the sum", () => {
    const dir = tempDir();
    write(dir, { "p.yaml": pipeline("all_success") });
    expect(cli(["validate", "p.yaml"], dir).code).toBe(0);
    const started = Date.now();
    const r = cli(["run", "p.yaml", "--reporter", "plain"], dir);
    const wall = Date.now() - started;
    expect(r.code).toBe(0);
    expect(wall).toBeLessThan(4_000); // three members of 1.5 s each: 4.5 s one after another
    for (const m of ["security", "tests", "style"]) expect(readFileSync(join(dir, `reports/${m}/report.md`), "utf8")).toBe(`${m}\n`);
    const ev = events(dir);
    expect(ev.at(-1)).toMatchObject({ type: "run.finished", outcome: "complete", reason: { message: '["review-security","review-tests","review-style"]'.replace(/^/, "joined: ") } });
    const started3 = ev.filter((e) => e.type === "phase.started").map((e) => e.phase);
    expect(started3.slice(1)[0]).toBe("reviews");
    expect(started3.slice(2).sort()).toEqual(["review-security", "review-style", "review-tests"]);
    // each member has its own logs
    expect(readdirSync(join(runDir(dir), "phases")).filter((d) => d.includes("review-")).length).toBe(3);
  }, 60_000);

  for (const [join, fail, code, outcome] of [
    ["all_success", ["tests"], 3, "blocked"],
    ["one_success", ["tests", "style"], 0, "complete"],
    ["one_success", ["security", "tests", "style"], 3, "blocked"],
    ["all_done", ["security", "tests", "style"], 0, "complete"],
  ] as const) {
    it(`join ${join} with ${fail.join(", ")} failing ends ${outcome}`, () => {
      const dir = tempDir();
      write(dir, { "p.yaml": pipeline(join, [...fail]).replace(/SLEEP: "1.5"/g, 'SLEEP: "0.1"') });
      const r = cli(["run", "p.yaml", "--reporter", "plain"], dir);
      expect(r.code).toBe(code);
      expect(events(dir).at(-1)).toMatchObject({ type: "run.finished", outcome });
      // the group is a phase of the log: started with its members, finished with its join's status
      const group = events(dir).filter((e) => e.phase === "reviews");
      expect(group.map((e) => e.type)).toEqual(["phase.started", "phase.finished"]);
      expect(group[0]).toMatchObject({ kind: "group", members: ["review-security", "review-tests", "review-style"], join });
      expect(group[1]).toMatchObject({ status: outcome === "complete" ? "succeeded" : "failed", error: outcome === "complete" ? null : "join_failed", join, output: { failed: [...fail].sort((a, b) => ["security", "tests", "style"].indexOf(a) - ["security", "tests", "style"].indexOf(b)).map((m) => `review-${m}`) } });
      expect(r.stdout).toMatch(/iteration 1 · reviews (succeeded|failed) in /);
    });
  }

  it("the write scope is judged per member: one that writes outside its own fails with policy_violation, the others do not", () => {
    const dir = tempDir();
    // style ends last: the others were judged before its stray file appeared
    write(dir, { "p.yaml": pipeline("all_success").replace(/SLEEP: "1.5"/g, 'SLEEP: "0.1"').replace('env: { NAME: style, SLEEP: "0.1"', 'env: { NAME: style, SLEEP: "1.5"').replace("echo \"$NAME ran\" >> \"ran-$NAME.txt\";", 'echo "$NAME ran" >> "ran-$NAME.txt"; if [ "$NAME" = style ]; then echo x > stray.txt; fi;') });
    const r = cli(["run", "p.yaml", "--reporter", "plain"], dir);
    expect(r.code).toBe(3);
    const finished = events(dir).filter((e) => e.type === "phase.finished");
    const status = Object.fromEntries(finished.map((e) => [e.phase, [e.status, e.error]]));
    expect(status["review-style"]).toEqual(["failed", "policy_violation"]);
    expect(status["review-security"]?.[0]).toBe("succeeded");
    expect(status["review-tests"]?.[0]).toBe("succeeded");
  });

  it("validate refuses members whose write scopes overlap, with a located error", () => {
    const dir = tempDir();
    write(dir, { "p.yaml": pipeline("all_success").replace('tests: { write: ["reports/tests/**"', 'tests: { write: ["reports/**"') });
    const r = cli(["validate", "p.yaml"], dir);
    expect(r.code).toBe(2);
    expect(r.stdout + r.stderr).toMatch(/p\.yaml:14:\d+: error GROUP_WRITE_OVERLAP members "review-security" and "review-tests" of group "reviews" may write the same files/);
  });

  it.skipIf(process.platform === "win32")("SIGKILL during a group, then resume: finished members are not run again", async () => {
    const dir = tempDir();
    // security ends at once; tests and style sleep long the first time only
    const text = pipeline("all_success").replace(/SLEEP: "1.5"/g, 'SLEEP: "0"').replace("sleep \"$SLEEP\";", 'sleep "$SLEEP"; if [ "$NAME" != security ] && [ ! -f "reports/$NAME/slept" ]; then mkdir -p "reports/$NAME"; touch "reports/$NAME/slept"; sleep 30; fi;');
    write(dir, { "p.yaml": text });
    const run = cliAsync(["run", "p.yaml", "--reporter", "plain"], dir);
    await waitFor(() => existsSync(join(dir, "ran-security.txt")) && existsSync(join(dir, "reports/tests/slept")) && existsSync(join(dir, "reports/style/slept")));
    // let the checkpoint with security's result be written
    await waitFor(() => readFileSync(join(runDir(dir), "state.json"), "utf8").includes('"review-security":{"status":"succeeded"'));
    process.kill(run.child.pid!, "SIGKILL");
    await run.done;
    const r = cli(["resume", "--reporter", "plain"], dir);
    expect(r.code).toBe(0);
    expect(readFileSync(join(dir, "ran-security.txt"), "utf8")).toBe("security ran\n");
    expect(readFileSync(join(dir, "ran-tests.txt"), "utf8")).toBe("tests ran\n");
    expect(readFileSync(join(dir, "ran-style.txt"), "utf8")).toBe("style ran\n");
    expect(events(dir).at(-1)).toMatchObject({ type: "run.finished", outcome: "complete" });
  }, 90_000);

  it.skipIf(process.platform === "win32")("SIGTERM during a group stops every member, exit 130; resume finishes the group", async () => {
    const dir = tempDir();
    const text = pipeline("all_success").replace(/SLEEP: "1.5"/g, 'SLEEP: "0"').replace("sleep \"$SLEEP\";", 'sleep "$SLEEP"; if [ ! -f "reports/$NAME/slept" ]; then mkdir -p "reports/$NAME"; touch "reports/$NAME/slept"; sleep 30; fi;');
    write(dir, { "p.yaml": text });
    const run = cliAsync(["run", "p.yaml", "--reporter", "plain"], dir);
    await waitFor(() => ["security", "tests", "style"].every((m) => existsSync(join(dir, `reports/${m}/slept`))));
    const t0 = Date.now();
    process.kill(run.child.pid!, "SIGTERM");
    expect((await run.done).code).toBe(130);
    expect(Date.now() - t0).toBeLessThan(15_000);
    expect(events(dir).at(-1)).toMatchObject({ type: "run.interrupted", signal: "SIGTERM" });
    const r = cli(["resume", "--reporter", "plain"], dir);
    expect(r.code).toBe(0);
    for (const m of ["security", "tests", "style"]) expect(readFileSync(join(dir, `ran-${m}.txt`), "utf8")).toBe(`${m} ran\n`);
  }, 90_000);
});
