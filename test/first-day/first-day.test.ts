/**
 * The first-day suite: what a new user meets, from a fresh clone of the commit, with the
 * defaults (the OS sandbox on where there is one), in git repositories with a typical
 * .gitignore and none of the folders the pipelines write yet, through the commands the
 * README and the docs show.
 *
 * - the README's first command, exactly as written (the second, `npm test`, is what CI runs);
 * - every recipe in pipelines/, its agent replaced by a scripted one through `--param agent=…`;
 * - every pipeline in README.md and docs/*.md, extracted from the Markdown, through validate
 *   and --dry-run, and the runnable ones (agents that need no account) through run.
 *
 * A case that fails only because of a known bug is `it.fails` naming the bug: it turns red
 * the day the bug is fixed, and is then made an ordinary `it`.
 */
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import process from "node:process";
import { beforeAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { ROOT } from "../cli/cli-helpers.ts";
import { freshClone, installTeamPackage, isPipeline, namedFile, sh, userRepo, yamlBlocks, type Ran } from "./first-day-helpers.ts";

const MINUTES = 60_000;
let clone: string;
let firstCommand: Ran;

/** The events of the latest run of a workdir. */
function lastRun(dir: string): Record<string, unknown>[] {
  const runs = join(dir, ".phaseloop/runs");
  if (!existsSync(runs)) return [];
  const id = readdirSync(runs).sort().at(-1);
  if (!id) return [];
  return readFileSync(join(runs, id, "events.jsonl"), "utf8").trim().split("\n").filter(Boolean).map((l) => JSON.parse(l) as Record<string, unknown>);
}

const finishedOf = (dir: string) => lastRun(dir).find((e) => e.type === "run.finished") as { outcome: string; reason: { code: string; message: string } } | undefined;

beforeAll(() => {
  clone = freshClone();
  const readme = readFileSync(join(clone, "README.md"), "utf8");
  const block = /## Two commands\n\n```sh\n([\s\S]*?)```/.exec(readme)?.[1] ?? "";
  const first = (block.split("\n")[0] ?? "").replace(/\s+#.*$/, "");
  expect(first).toBe("npm ci && npx phaseloop run pipelines/hailstone.yaml");
  firstCommand = sh(first, clone, {}, 15 * MINUTES);
}, 20 * MINUTES);

describe("the README's first command, in a fresh clone", () => {
  it("installs phaseloop, builds it, and starts the hailstone run", () => {
    expect(existsSync(join(clone, "node_modules/yaml")), firstCommand.stderr).toBe(true);
    expect(existsSync(join(clone, "dist/cli.cjs")), firstCommand.stderr).toBe(true);
    // nothing but phaseloop's own words on stderr (V8 once said "unrecognized flag" on Node 22)
    expect(firstCommand.stderr).not.toMatch(/internal error|INTERNAL|unrecognized flag/);
    // on the Node lines phaseloop promises (package.json engines), nothing it installs says otherwise
    const [major, minor] = process.versions.node.split(".").map(Number) as [number, number];
    if (major > 22 || (major === 22 && minor >= 12)) expect(firstCommand.stderr).not.toMatch(/EBADENGINE/);
    expect(lastRun(clone)[0]).toMatchObject({ type: "run.started", pipeline: "hailstone" });
  });

  // met as: the project's .gitignore lists hailstone.txt, and the run stopped with "no file
  // changed in 2 iterations in a row"
  it("completes: exit 0, the sequence down to 1 (hailstone.txt is ignored by the clone's .gitignore)", () => {
    expect(firstCommand.code, firstCommand.stdout + firstCommand.stderr).toBe(0);
    expect(finishedOf(clone)?.outcome).toBe("complete");
    expect(readFileSync(join(clone, "hailstone.txt"), "utf8").trim().split("\n").at(-1)).toBe("1");
  });
});

/**
 * One scripted agent for every recipe: what a capable agent would do in each phase, decided by
 * the recipe (its first argument), the phase and the iteration. It keeps no state of its own.
 */
const AGENT = `#!/bin/sh
cat > /dev/null
recipe="$1"
case "$recipe:$PHASELOOP_PHASE" in
  ralph:work|supervisor:implement)
    printf '{ "name": "first-day", "version": "1.0.0", "private": true, "scripts": { "test": "node -e \\\\"process.exit(0)\\\\"" } }\\n' > package.json
    mkdir -p src && echo "module.exports = '$PHASELOOP_TASK';" > "src/work-\${PHASELOOP_TASK:-main}.js"
    echo "done" ;;
  execute-review:execute)
    mkdir -p src && echo "console.log('hello');" > src/app.js
    echo "Wrote src/app.js."; echo "STATUS: INCOMPLETE" ;;
  execute-review:review)
    printf 'loop = 1\\nsummary = "src/app.js does what TASK.md asks"\\nblocker = ""\\n' > "$PHASELOOP_ARTIFACTS/review_output.toml" ;;
  plan-execute-review:interpret) echo "It means a greeting function in src/greet.js." ;;
  plan-execute-review:plan) printf 'PLAN:\\n- write src/greet.js\\n' ;;
  plan-execute-review:execute) mkdir -p src && echo "export const greet = () => 'hi';" > src/greet.js ;;
  plan-execute-review:review) printf 'ISSUES:\\n\\n<verdict>READY_TO_DEPLOY</verdict>\\n' ;;
  generator-evaluator:generate) mkdir -p src && echo "export const story = '$PHASELOOP_TASK';" > "src/$PHASELOOP_TASK.js" ;;
  generator-evaluator:evaluate) echo "<verdict>PASS</verdict>" ;;
  *) echo "first-day agent: no script for $recipe:$PHASELOOP_PHASE" >&2; exit 1 ;;
esac
`;

/** Each recipe: what the user has in the repository, the params besides the agent, and how it must end. */
const RECIPES: Record<string, { files?: Record<string, string>; params?: string[]; knownBug?: string }> = {
  ralph: { files: { "PROMPT.md": "Make `npm test` pass.\n" } },
  // met as: the reviewer's .phaseloop/review_output.toml was refused by the OS sandbox; the recipe's review is in the run's artifacts folder now
  "execute-review": { files: { "TASK.md": "Print hello from src/app.js.\n" } },
  "plan-execute-review": { params: ["goal=add a greeting"] },
  supervisor: { files: { "tasks/001-greet.md": "---\npriority: 1\n---\n# Greet\nAdd a greeting.\n", "tasks/002-farewell.md": "# Farewell\n<!-- depends_on: 001-greet -->\nAdd a farewell.\n" } },
  "generator-evaluator": { files: { ".loop/prd.json": JSON.stringify({ userStories: [{ id: "US-001", title: "Greet", priority: 1, passes: false }, { id: "US-002", title: "Farewell", priority: 2, passes: false }] }, null, 2) } },
};

describe("every recipe, under the defaults, with a scripted agent", () => {
  // the agent is a script of the user's repository (the sandbox gives each phase a /tmp of its own)
  const agent = "scripts/agent.sh";

  it("covers every recipe in pipelines/", () => {
    const recipes = readdirSync(join(clone, "pipelines")).filter((f) => f.endsWith(".yaml")).map((f) => f.replace(/\.yaml$/, ""));
    expect(recipes.sort()).toEqual([...Object.keys(RECIPES), "hailstone"].sort());
  });

  for (const [name, r] of Object.entries(RECIPES)) {
    const test = r.knownBug ? it.fails : it;
    test(`${name}: init, then run with --param agent=…: exit 0, complete${r.knownBug ? ` (known bug: ${r.knownBug})` : ""}`, () => {
      const dir = userRepo(clone, { ...r.files, [agent]: AGENT });
      const init = sh(`npx phaseloop init ${name}`, dir);
      expect(init.code, init.stderr).toBe(0);
      const params = [`agent=sh ${agent} ${name}`, ...(r.params ?? [])].map((p) => `--param '${p.replaceAll("'", "'\\''")}'`).join(" ");
      const run = sh(`npx phaseloop run pipelines/${name}.yaml ${params}`, dir, {}, 5 * MINUTES);
      expect(run.stderr).not.toMatch(/internal error|unrecognized flag/);
      expect(run.code, `${run.stdout}\n${run.stderr}`).toBe(0);
      expect(finishedOf(dir)?.outcome).toBe("complete");
      // the run's own output and state are not the user's work
      expect(sh("git status --porcelain --ignored .phaseloop", dir).stdout).toMatch(/^!! \.phaseloop\/$/m);
    }, 6 * MINUTES);
  }

  it("hailstone: init, then run as the recipe ships (its agent is scripted already): exit 0, complete", () => {
    const dir = userRepo(clone);
    expect(sh("npx phaseloop init hailstone", dir).code).toBe(0);
    const run = sh("npx phaseloop run pipelines/hailstone.yaml", dir, {}, 5 * MINUTES);
    expect(run.code, `${run.stdout}\n${run.stderr}`).toBe(0);
    expect(readFileSync(join(dir, "hailstone.txt"), "utf8").trim().split("\n").at(-1)).toBe("1");
  }, 6 * MINUTES);
});

/** Agent CLIs the docs' pipelines name, stood in for so that preflight finds them (they are never run). */
const STAND_INS = ["claude", "codex", "gemini", "aider"];

/** Pipelines of the docs that fail only because of a known bug, by name. */
const KNOWN_DOC_BUGS: Record<string, string> = {
};

const DOCS = ["README.md", ...readdirSync(join(ROOT, "docs")).filter((f) => f.endsWith(".md")).sort().map((f) => `docs/${f}`)];
/** Listed from this checkout when the tests are collected; the files are read from the clone, the same commit. */
const DOC_PIPELINES = yamlBlocks(ROOT, DOCS).filter(isPipeline);

describe("every pipeline in README.md and docs/*.md", () => {
  let repo: string;
  let env: Record<string, string>;
  const fileOf = (where: string) => `${where.replace(/[^A-Za-z0-9]+/g, "-")}.yaml`;

  beforeAll(() => {
    repo = userRepo(clone);
    installTeamPackage(clone, repo);
    const blocks = yamlBlocks(clone, DOCS);
    // the files the docs show by name (a team's catalogue) are the user's
    for (const b of blocks) {
      const name = namedFile(b);
      if (name) {
        mkdirSync(dirname(join(repo, name)), { recursive: true });
        writeFileSync(join(repo, name), b.text);
      }
    }
    const bin = mkdtempSync(join(tmpdir(), "phaseloop-first-day-bin-"));
    for (const cli of STAND_INS) {
      writeFileSync(join(bin, cli), `#!/bin/sh\necho "${cli} 0.0.0 (a stand-in)"\n`);
      chmodSync(join(bin, cli), 0o755);
    }
    env = { PATH: `${bin}:${process.env.PATH}` };
    for (const p of blocks.filter(isPipeline)) {
      writeFileSync(join(repo, fileOf(p.where)), p.text);
      // a prompt file a pipeline names is the user's own
      for (const m of p.text.matchAll(/prompt: ([\w./-]+\.md)\b/g)) {
        if (!existsSync(join(repo, m[1]!))) {
          mkdirSync(dirname(join(repo, m[1]!)), { recursive: true });
          writeFileSync(join(repo, m[1]!), "Review the change.\n");
        }
      }
    }
  });

  it("finds the pipelines the docs show", () => {
    expect(DOC_PIPELINES.length).toBeGreaterThanOrEqual(10);
  });

  for (const block of DOC_PIPELINES) {
    const name = /^name: ([\w-]+)/m.exec(block.text)?.[1] ?? block.where;
    const known = KNOWN_DOC_BUGS[name];
    const test = known ? it.fails : it;
    test(`${block.where} (${name}): validates, dry-runs, and runs when its agents need no account${known ? ` (known bug: ${known})` : ""}`, () => {
      const file = fileOf(block.where);
      const valid = sh(`npx phaseloop validate ${file}`, repo, env);
      expect(valid.code, valid.stdout + valid.stderr).toBe(0);
      // what the merged pipeline needs: its params without a default, and whether an agent needs an account
      const merged = parse(sh(`npx phaseloop validate --print ${file}`, repo, env).stdout) as { params?: Record<string, { type?: string; default?: unknown }>; agents?: Record<string, { preset?: string; command?: string[] }> };
      const required = Object.entries(merged.params ?? {}).filter(([, p]) => p.default === undefined).map(([k, p]) => `--param ${k}=${p.type === "integer" || p.type === "number" ? "1" : p.type === "boolean" ? "true" : "x"}`);
      const dry = sh(`npx phaseloop run ${file} --dry-run ${required.join(" ")}`, repo, env);
      expect(dry.code, dry.stdout + dry.stderr).toBe(0);
      expect(dry.stdout).toContain("each phase as it will start in iteration 1");
      // an agent needs an account when it is a preset, or its command (or the param it renders) starts one of their CLIs
      const commands = [...Object.values(merged.agents ?? {}).map((a) => (a.command ?? []).join(" ")), ...Object.values(merged.params ?? {}).map((p) => String(p.default ?? ""))].join("\n");
      const needsAccount = Object.values(merged.agents ?? {}).some((a) => a.preset !== undefined) || STAND_INS.some((cli) => new RegExp(`(^|[\\s/"])${cli}\\b`).test(commands));
      if (needsAccount) return;
      const run = sh(`npx phaseloop run ${file} --reporter plain ${required.join(" ")}`, repo, env, 5 * MINUTES);
      expect(run.code, run.stdout.split("\n").slice(-6).join("\n") + run.stderr).toBe(0);
    }, 6 * MINUTES);
  }
});
