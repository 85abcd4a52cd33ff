// Installs the agent CLIs the contract tests drive, at the versions pinned in
// test/agents-contract/versions.json, into a cache outside the repository
// (PHASELOOP_AGENTS_CACHE, default ~/.cache/phaseloop-agents/NAME@VERSION).
// Idempotent. A CLI that cannot be installed is reported loudly; its tests then skip.
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const manifest = JSON.parse(readFileSync(join(root, "test/agents-contract/versions.json"), "utf8"));
const cache = process.env.PHASELOOP_AGENTS_CACHE ?? join(homedir(), ".cache/phaseloop-agents");
let failed = 0;
for (const [pkg, { version, bin }] of Object.entries(manifest)) {
  const dir = join(cache, `${pkg.replace("/", "+")}@${version}`);
  const exe = join(dir, "node_modules/.bin", bin);
  if (!existsSync(exe)) {
    const r = spawnSync("npm", ["install", "--no-audit", "--no-fund", "--no-save", "--prefix", dir, `${pkg}@${version}`], { stdio: ["ignore", "inherit", "inherit"] });
    if (r.status !== 0 || !existsSync(exe)) {
      console.error(`!!! could not install ${pkg}@${version}: its contract tests will be SKIPPED`);
      failed++;
      continue;
    }
  }
  console.log(`${pkg}@${version}: ${exe}`);
}
process.exit(failed ? 1 : 0);
