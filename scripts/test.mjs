// The test command: the whole suite on Node (vitest) and on Deno (the same suite
// under `deno run -A npm:vitest`), then one closing line "N passed, N failed".
// Exits non-zero when any test failed or a runner could not start.
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const args = process.argv.slice(2);
const only = args.filter((a) => !a.startsWith("--"));
const runtimes = args.includes("--node-only") ? ["node"] : args.includes("--deno-only") ? ["deno"] : ["node", "deno"];
const out = mkdtempSync(join(tmpdir(), "phaseloop-test-"));

let passed = 0;
let failed = 0;
let broken = false;
for (const runtime of runtimes) {
  const report = join(out, `${runtime}.json`);
  const vitestArgs = ["run", "--reporter=default", "--reporter=json", `--outputFile.json=${report}`, ...only];
  const [cmd, cmdArgs] =
    runtime === "node"
      ? [process.execPath, [join(root, "node_modules/vitest/vitest.mjs"), ...vitestArgs]]
      : [process.execPath, [join(root, "node_modules/deno/bin.cjs"), "run", "-A", "npm:vitest", ...vitestArgs]];
  console.log(`\n── ${runtime}: vitest ${vitestArgs.slice(3).join(" ")}`);
  const r = spawnSync(cmd, cmdArgs, { cwd: root, stdio: "inherit", env: { ...process.env, PHASELOOP_TEST_RUNTIME: runtime } });
  if (!existsSync(report)) {
    console.error(`${runtime}: vitest wrote no report (exit ${r.status})`);
    broken = true;
    continue;
  }
  const json = JSON.parse(readFileSync(report, "utf8"));
  const p = json.numPassedTests ?? 0;
  const f = (json.numFailedTests ?? 0) + (json.numRuntimeErrorTestSuites ?? 0) ;
  console.log(`${runtime}: ${p} passed, ${f} failed`);
  passed += p;
  failed += f;
  if (r.status !== 0 && f === 0) {
    console.error(`${runtime}: vitest exited ${r.status}`);
    broken = true;
  }
}
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed > 0 || broken ? 1 : 0);
