/**
 * The aider preset against a scripted stand-in: aider is a Python program
 * that is not on npm, so no pinned real binary runs here. The stand-in is an
 * `aider` on PATH that records the argv it was given, reads the message file
 * as aider does, writes the files it is told to and prints what aider 0.86
 * prints with `--no-pretty --no-stream` (an edit applied, the token line).
 * What is tested is phaseloop's side: the argv, the prompt file, and the
 * after-checks of the measured changes, since aider has no allowlist.
 */
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";
import { beforeAll, describe, expect, it } from "vitest";
import { cliAsync, ensureBuilt, git, runDir, tempDir, write } from "../cli/cli-helpers.ts";

const STANDIN = `#!/usr/bin/env node
const fs = require("fs");
const path = require("path");
const argv = process.argv.slice(2);
fs.writeFileSync(process.env.STANDIN_ARGV, JSON.stringify(argv));
const message = fs.readFileSync(argv[argv.indexOf("--message-file") + 1], "utf8");
const model = argv.includes("--model") ? argv[argv.indexOf("--model") + 1] : "gpt-4o";
process.stdout.write("Aider v0.86.2\\nModel: " + model + " with diff edit format\\nGit repo: .git with 2 files\\nRepo-map: using 4096 tokens, auto refresh\\n\\n");
if (process.env.STANDIN_FAIL) {
  process.stderr.write(process.env.STANDIN_FAIL + "\\n");
  process.exit(1);
}
for (const rel of (process.env.STANDIN_WRITES || "").split(",").filter(Boolean)) {
  fs.mkdirSync(path.dirname(rel), { recursive: true });
  fs.writeFileSync(rel, "// " + message.trim() + "\\n");
  process.stdout.write(rel + "\\n\`\`\`\\n<<<<<<< SEARCH\\n=======\\n// " + message.trim() + "\\n>>>>>>> REPLACE\\n\`\`\`\\n\\nApplied edit to " + rel + "\\n");
}
process.stdout.write("STATUS: COMPLETE\\nTokens: 2.1k sent, 120 received. Cost: $0.0065 message, $0.0065 session.\\n");
`;

let binDir = "";
beforeAll(() => {
  ensureBuilt();
  binDir = tempDir("phaseloop-aider-bin-");
  writeFileSync(join(binDir, "aider"), STANDIN);
  chmodSync(join(binDir, "aider"), 0o755);
}, 120_000);

function pipeline(tools: string | undefined, onViolation = ""): string {
  return `phaseloop: 1
name: aider-standin
sandbox: off
agents:
  aider: { preset: aider, model: ollama_chat/qwen2.5-coder }
${tools ? `tools:\n  t: { ${tools}${onViolation} }\n` : ""}phases:
  work:
    agent: aider
${tools ? "    tools: t\n" : ""}    prompt: "Add the greeting."
    retry: { max_attempts: 1 }
    output:
      status: { match: 'STATUS: (\\w+)' }
    next:
      - stop: complete
stop: { max_iterations: 1 }
`;
}

async function run(opts: { tools?: string; onViolation?: string; writes?: string[]; fail?: string }) {
  const top = tempDir("phaseloop-aider-");
  const dir = join(top, "work");
  mkdirSync(dir);
  write(dir, { "p.yaml": pipeline(opts.tools, opts.onViolation), "src/a.ts": "export const a = 1;\n", "README.md": "# x\n" });
  git(dir, "init", "-q");
  git(dir, "add", "-A");
  git(dir, "commit", "-qm", "start");
  const env: Record<string, string> = { PATH: `${binDir}:${process.env.PATH ?? "/usr/bin:/bin"}`, STANDIN_ARGV: join(top, "argv.json"), STANDIN_WRITES: (opts.writes ?? []).join(",") };
  if (opts.fail) env.STANDIN_FAIL = opts.fail;
  const r = await cliAsync(["run", "p.yaml", "--reporter", "plain"], dir, env).done;
  const events = readFileSync(join(runDir(dir), "events.jsonl"), "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l) as Record<string, unknown>);
  const finished = events.find((e) => e.type === "phase.finished") ?? {};
  const argv = existsSync(join(top, "argv.json")) ? (JSON.parse(readFileSync(join(top, "argv.json"), "utf8")) as string[]) : [];
  return { ...r, dir, finished, argv };
}

describe("aider preset (scripted stand-in: aider is not on npm)", { timeout: 60_000 }, () => {
  it("gets the prompt in a message file and the flags that keep it headless and uncommitted", async () => {
    const o = await run({ tools: 'write: ["src/**"]', writes: ["src/b.ts"] });
    expect(o.finished).toMatchObject({ status: "succeeded", output: { status: "COMPLETE" }, changes: ["src/b.ts"] });
    const file = o.argv[o.argv.indexOf("--message-file") + 1]!;
    expect(file).toMatch(/phases\/0001-work\/prompt\.md$/);
    expect(readFileSync(file, "utf8")).toContain("Add the greeting.");
    expect(o.argv).toEqual(expect.arrayContaining(["--yes-always", "--no-auto-commits", "--no-stream", "--no-pretty", "--no-suggest-shell-commands", "--model", "ollama_chat/qwen2.5-coder"]));
    expect(readFileSync(join(o.dir, "src/b.ts"), "utf8")).toBe("// Add the greeting.\n");
    // no commit was made: the change is the user's to review
    expect(readFileSync(join(runDir(o.dir), "phases/0001-work/stdout.log"), "utf8")).toContain("Applied edit to src/b.ts");
  });

  it("an edit outside the write globs is a policy_violation naming the file (aider cannot be told the scope)", async () => {
    const o = await run({ tools: 'write: ["src/**"]', writes: ["src/b.ts", "README.md"] });
    expect(o.finished).toMatchObject({ status: "failed", error: "policy_violation" });
    expect(String(o.finished.message)).toContain("README.md");
    expect(readFileSync(join(o.dir, "README.md"), "utf8")).not.toBe("# x\n");
  });

  it("on_violation: revert restores the file aider edited outside the scope", async () => {
    const o = await run({ tools: 'write: ["src/**"]', onViolation: ", on_violation: revert", writes: ["README.md"] });
    expect(o.finished).toMatchObject({ status: "failed", error: "policy_violation" });
    expect(readFileSync(join(o.dir, "README.md"), "utf8")).toBe("# x\n");
  });

  it("a failing aider fails the phase by its exit code, quoting its last line on stderr", async () => {
    const o = await run({ fail: "litellm.AuthenticationError: AuthenticationError: OpenAIException - Incorrect API key provided" });
    expect(o.finished).toMatchObject({ status: "failed", error: "exit_nonzero" });
    expect(String(o.finished.message)).toBe("exit code 1: litellm.AuthenticationError: AuthenticationError: OpenAIException - Incorrect API key provided");
  });
});
