import { existsSync, readFileSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, join } from "node:path";
import process from "node:process";

const here = dirname(new URL(import.meta.url).pathname);
const manifest = JSON.parse(readFileSync(join(here, "versions.json"), "utf8")) as Record<string, { version: string; bin: string }>;

/** The version of an agent CLI the contract tests pin (versions.json). */
export function pinnedVersion(pkg: string): string {
  const entry = manifest[pkg];
  if (!entry) throw new Error(`${pkg} is not in versions.json`);
  return entry.version;
}

/** The folder holding a pinned agent CLI's binary, installed by scripts/install-agents.mjs; undefined when it is not. */
export function agentBinDir(pkg: string): string | undefined {
  const entry = manifest[pkg];
  if (!entry) return undefined;
  const cache = process.env.PHASELOOP_AGENTS_CACHE ?? join(homedir(), ".cache/phaseloop-agents");
  const dir = join(cache, `${pkg.replace("/", "+")}@${entry.version}`, "node_modules/.bin");
  if (existsSync(join(dir, entry.bin))) return dir;
  console.warn(`!!! ${pkg}@${entry.version} is not installed (node scripts/install-agents.mjs): its contract tests are SKIPPED`);
  return undefined;
}
