// Installs the YAML language server the editor tests drive (the one VS Code's YAML
// extension, Neovim, Helix and Zed run), at a pinned version, into a cache outside
// the repository (PHASELOOP_TOOLS_CACHE, default ~/.cache/phaseloop-tools). Idempotent.
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";

export const YAML_SERVER_VERSION = "2.0.0";
export const yamlServerDir = () => join(process.env.PHASELOOP_TOOLS_CACHE ?? join(homedir(), ".cache/phaseloop-tools"), `yaml-language-server@${YAML_SERVER_VERSION}`);
export const yamlServerBin = () => join(yamlServerDir(), "node_modules/yaml-language-server/bin/yaml-language-server");

if (import.meta.url === `file://${process.argv[1]}`) {
  if (!existsSync(yamlServerBin())) {
    const r = spawnSync("npm", ["install", "--no-audit", "--no-fund", "--no-save", "--prefix", yamlServerDir(), `yaml-language-server@${YAML_SERVER_VERSION}`], { stdio: ["ignore", "inherit", "inherit"] });
    if (r.status !== 0 || !existsSync(yamlServerBin())) {
      console.error(`!!! could not install yaml-language-server@${YAML_SERVER_VERSION}: the editor tests will be SKIPPED`);
      process.exit(1);
    }
  }
  console.log(`yaml-language-server@${YAML_SERVER_VERSION}: ${yamlServerBin()}`);
}
