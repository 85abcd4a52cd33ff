/**
 * Parallel members are judged each against its own write globs. Members run at once in the
 * same folders, and the kernel cannot tell `src/a.txt` from `src/b*.txt`: before, member A
 * allowed `src/a.txt` wrote `src/b.txt` in member B's scope, the fence opened all of `src/`
 * to both, and the check afterwards credited the file to B. Met as a user meets it: the real
 * CLI, the defaults, a git repository with a `.gitignore`, folders that do not exist yet.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { probeSandbox } from "../../src/host/probe-sandbox.ts";
import { cliAsync, ensureBuilt, events, git, tempDir, write } from "../cli/cli-helpers.ts";
import { skipped } from "../skip-reason.ts";

const probe = probeSandbox();

beforeAll(() => ensureBuilt(), 120_000);

function repo(files: Record<string, string> = {}) {
  const root = tempDir("phaseloop-parallel-");
  const home = join(root, "home");
  const work = join(root, "repo");
  mkdirSync(home, { recursive: true });
  mkdirSync(work, { recursive: true });
  writeFileSync(join(home, ".bashrc"), "original\n");
  git(work, "init", "-q");
  write(work, { ".gitignore": "node_modules/\n*.log\n", "README.md": "readme\n", ...files });
  git(work, "add", "-A");
  git(work, "commit", "-qm", "init");
  return { home, work };
}

/** Two command agents in one group; each runs the script its phase names. */
function pipeline(a: { write: string[]; script: string }, b: { write: string[]; script: string }) {
  const q = (s: string) => JSON.stringify(s);
  return `phaseloop: 1
name: members
agents:
  a: { command: [sh, -c, ${q(a.script)}] }
  b: { command: [sh, -c, ${q(b.script)}] }
tools:
  ta: { write: ${JSON.stringify(a.write)} }
  tb: { write: ${JSON.stringify(b.write)} }
phases:
  both:
    parallel: [member-a, member-b]
    join: all_done
    next: [{ stop: complete }]
  member-a: { agent: a, tools: ta, prompt: go }
  member-b: { agent: b, tools: tb, prompt: go }
stop: { max_iterations: 1 }
`;
}

async function run(work: string, home: string, text: string) {
  writeFileSync(join(work, "p.yaml"), text);
  const r = await cliAsync(["run", "p.yaml", "--reporter", "plain"], work, { HOME: home }).done;
  const ev = events(work);
  const finished = Object.fromEntries(ev.filter((e) => e.type === "phase.finished").map((e) => [e.phase, e]));
  const refused = Object.fromEntries(ev.filter((e) => e.type === "sandbox.refused").map((e) => [e.phase, (e.refused as string[]).join("\n")]));
  return { r, finished, refused, ev };
}

const read = (path: string) => (existsSync(path) ? readFileSync(path, "utf8") : undefined);

describe.skipIf(skipped(!probe.available, `no OS sandbox here: ${probe.available ? "" : probe.reason}`))("parallel members each within their own globs", () => {
  it("as met: A allowed src/a.txt writes src/b.txt and src/b-extra.txt in B's scope, in a src/ that did not exist", async () => {
    const { home, work } = repo();
    const { finished, refused } = await run(
      work,
      home,
      pipeline(
        { write: ["src/a.txt"], script: "mkdir -p src && echo a > src/a.txt && echo pwn > src/b.txt && echo pwn > src/b-extra.txt && echo pwn > src/c.txt; exit 0" },
        { write: ["src/b*.txt"], script: "sleep 0.3; mkdir -p src && echo b > src/b-own.txt" },
      ),
    );
    expect(finished["member-a"]).toMatchObject({ status: "failed", error: "policy_violation" });
    expect(finished["member-b"]).toMatchObject({ status: "succeeded" });
    for (const name of ["b.txt", "b-extra.txt", "c.txt"]) {
      expect(read(join(work, "src", name)), name).toBeUndefined();
      expect(refused["member-a"]).toContain(join(work, "src", name));
    }
    expect(refused["member-b"]).toBeUndefined();
    expect(read(join(work, "src", "a.txt"))).toBe("a\n");
    expect(read(join(work, "src", "b-own.txt"))).toBe("b\n");
  }, 60_000);

  it("both hostile, into files that exist and folders below: each one's writes into the other's scope are its own violation, nothing of it lands", async () => {
    const { home, work } = repo({ "src/b-old.txt": "b old\n", "src/a.txt": "a old\n", "src/lib/x.ts": "x\n" });
    const a = [
      "echo a > src/a.txt",
      "echo pwn >> src/b-old.txt",
      "rm -f src/lib/x.ts",
      "echo pwn > src/lib/y.ts",
      "mkdir -p src/deep/er && echo pwn > src/deep/er/z.ts",
      "ln -s ../README.md src/b-link.txt",
      "chmod +x src/b-old.txt",
      "sleep 0.3; exit 0",
    ].join("; ");
    const b = ["sleep 0.1", "echo b > src/lib/w.ts", "mkdir -p src/new/dir && echo b > src/new/dir/v.ts", "echo pwn >> src/a.txt", "mv src/b-old.txt src/b-moved.txt", "exit 0"].join("; ");
    const { finished, refused } = await run(work, home, pipeline({ write: ["src/a.txt"], script: a }, { write: ["src/**/*.ts", "src/b*.txt"], script: b }));
    expect(finished["member-a"]).toMatchObject({ status: "failed", error: "policy_violation" });
    expect(finished["member-b"]).toMatchObject({ status: "failed", error: "policy_violation" });
    // A's own file is A's work; what B appended to it is B's violation
    expect(read(join(work, "src", "a.txt"))).toBe("a\n");
    expect(refused["member-b"]).toContain(join(work, "src", "a.txt"));
    // B's files A touched are as they were; B's own rename is B's work
    expect(read(join(work, "src", "b-old.txt"))).toBeUndefined();
    expect(read(join(work, "src", "b-moved.txt"))).toBe("b old\n");
    expect(read(join(work, "src", "lib", "x.ts"))).toBe("x\n");
    for (const path of ["src/lib/y.ts", "src/deep/er/z.ts", "src/b-link.txt"]) {
      expect(existsSync(join(work, path)), path).toBe(false);
      expect(refused["member-a"]).toContain(join(work, path));
    }
    expect(read(join(work, "src", "lib", "w.ts"))).toBe("b\n");
    expect(read(join(work, "src", "new", "dir", "v.ts"))).toBe("b\n");
  }, 60_000);

  it("members whose folders do not meet, and one allowed a file at the top: each writes its own, the stray write at the top is refused", async () => {
    const { home, work } = repo();
    const { finished, refused } = await run(
      work,
      home,
      pipeline(
        { write: ["notes.md", "docs/**"], script: "echo n > notes.md; mkdir -p docs/x && echo d > docs/x/d.md; echo pwn > src-a.txt; echo pwn > reports/r.md; exit 0" },
        { write: ["reports/**"], script: "mkdir -p reports && echo r > reports/own.md; echo pwn > notes-b.md; exit 0" },
      ),
    );
    expect(read(join(work, "notes.md"))).toBe("n\n");
    expect(read(join(work, "docs", "x", "d.md"))).toBe("d\n");
    expect(read(join(work, "reports", "own.md"))).toBe("r\n");
    expect(read(join(work, "reports", "r.md"))).toBeUndefined();
    expect(read(join(work, "src-a.txt"))).toBeUndefined();
    expect(read(join(work, "notes-b.md"))).toBeUndefined();
    expect(finished["member-a"]).toMatchObject({ error: "policy_violation" });
    expect(finished["member-b"]).toMatchObject({ error: "policy_violation" });
    expect(refused["member-a"]).toContain("src-a.txt");
    expect(refused["member-b"]).toContain("notes-b.md");
    expect(read(join(home, ".bashrc"))).toBe("original\n");
  }, 60_000);

  it("in a workdir that is not a repository, a member whose globs name .git cannot carry one in, and a FIFO in its copy does not stall phaseloop", async () => {
    const root = tempDir("phaseloop-parallel-");
    const work = join(root, "repo");
    const home = join(root, "home");
    mkdirSync(work, { recursive: true });
    mkdirSync(home, { recursive: true });
    const { finished, refused } = await run(
      work,
      home,
      pipeline(
        { write: [".git/**", "a.txt", "p*"], script: "mkdir -p .git/hooks && printf '[core]\\n\\tfsmonitor = touch PWNED\\n' > .git/config && echo x > .git/hooks/post-checkout; echo a > a.txt; mkfifo pipe; exit 0" },
        { write: ["b.txt"], script: "echo b > b.txt" },
      ),
    );
    expect(existsSync(join(work, ".git"))).toBe(false);
    expect(read(join(work, "a.txt"))).toBe("a\n");
    expect(read(join(work, "b.txt"))).toBe("b\n");
    expect(existsSync(join(work, "PWNED"))).toBe(false);
    expect(finished["member-a"]).toMatchObject({ error: "policy_violation" });
    expect(refused["member-a"]).toContain(join(work, ".git", "config"));
  }, 60_000);

  it("a member without a tool set writes where it likes; a scoped member beside it is not blamed for that, and its own stray write is still its violation", async () => {
    const { home, work } = repo();
    const text = `phaseloop: 1
name: members
agents:
  a: { command: [sh, -c, "sleep 0.5; mkdir -p src && echo a > src/a.txt && echo pwn > src/c.txt; exit 0"] }
tools:
  ta: { write: ["src/a.txt"] }
phases:
  both:
    parallel: [member-a, member-b]
    join: all_done
    next: [{ stop: complete }]
  member-a: { agent: a, tools: ta, prompt: go }
  member-b: { run: "mkdir -p src && echo b > src/b.txt" }
stop: { max_iterations: 1 }
`;
    const { finished, refused } = await run(work, home, text);
    expect(read(join(work, "src", "b.txt"))).toBe("b\n");
    expect(read(join(work, "src", "a.txt"))).toBe("a\n");
    expect(read(join(work, "src", "c.txt"))).toBeUndefined();
    expect(finished["member-b"]).toMatchObject({ status: "succeeded" });
    expect(finished["member-a"]).toMatchObject({ error: "policy_violation" });
    expect(refused["member-a"]).toContain(join(work, "src", "c.txt"));
    expect(refused["member-a"]).not.toContain("b.txt");
  }, 60_000);
});
