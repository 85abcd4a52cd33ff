// Builds dist/ for Node and npm: generated code first, then tsc (the library and
// its types), then the CLI bundled by rolldown into dist/cli.cjs and one chunk per
// command in dist/chunks/: loading a few files instead of a hundred is most of
// the CLI's startup time. Deno runs src/ directly and needs none of this.
import { spawnSync } from "node:child_process";
import { chmodSync, copyFileSync, existsSync, rmSync } from "node:fs";
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
const { build } = await import("rolldown");
await build({
  cwd: root,
  input: { cli: join(root, "src/cli.ts") },
  platform: "node",
  // listr2 is loaded only by the terminal reporter; it stays a dependency
  external: [/^node:/, "listr2"],
  // yaml's ES module build (the same code as its CommonJS one) tree-shakes
  resolve: { alias: { yaml: join(root, "node_modules/yaml/browser/index.js") } },
  logLevel: "warn",
  output: {
    dir: join(root, "dist"),
    // CommonJS: Node loads it several milliseconds faster than ES modules,
    // which is most of what separates `phaseloop validate` from `node -e 0`
    format: "cjs",
    entryFileNames: "[name].cjs",
    // chunks sit two levels under the package root, like src/commands/, so
    // paths such as ../../schemas resolve the same from both
    chunkFileNames: "chunks/[name]-[hash].cjs",
    // less to read and parse on every start
    minify: true,
    // all ASCII (other characters escaped): V8 keeps a source holding any other character as
    // a two-byte string, twice the memory, and a loop forks at a cost that grows with memory
    charset: "ascii",
  },
});
chmodSync(join(root, "dist/cli.cjs"), 0o755);
// the page of `phaseloop ui` and `report --html`: one script and one style sheet, served by the
// server and inlined by the report; src/ui-page/ is written against the DOM alone, no framework
await build({
  cwd: root,
  input: join(root, "src/ui-page/main.ts"),
  platform: "browser",
  logLevel: "warn",
  output: { file: join(root, "dist/ui-assets/page.js"), format: "iife", minify: true, charset: "ascii" },
});
copyFileSync(join(root, "src/ui-page/style.css"), join(root, "dist/ui-assets/page.css"));
// tsc's copy of the page's modules is not what the browser loads
rmSync(join(root, "dist/ui-page"), { recursive: true, force: true });
// tsc's unbundled copy of the entry is not the CLI: leave no second one about
for (const f of ["dist/cli.js", "dist/cli.d.ts", "dist/cli.js.map", "dist/cli.d.ts.map"]) rmSync(join(root, f), { force: true });
