// Builds dist/ for Node and npm: generated code first, then tsc, then the bin's mode.
import { spawnSync } from "node:child_process";
import { chmodSync, existsSync, rmSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { dirname, join } from "node:path";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const run = (cmd, args) => {
  const r = spawnSync(cmd, args, { cwd: root, stdio: "inherit" });
  if (r.status !== 0) process.exit(r.status ?? 1);
};

if (existsSync(join(root, "scripts/generate-validator.mjs"))) run(process.execPath, ["scripts/generate-validator.mjs"]);
rmSync(join(root, "dist"), { recursive: true, force: true });
run(process.execPath, [join(root, "node_modules/typescript/bin/tsc"), "-p", "tsconfig.json"]);
if (existsSync(join(root, "dist/cli.js"))) chmodSync(join(root, "dist/cli.js"), 0o755);
