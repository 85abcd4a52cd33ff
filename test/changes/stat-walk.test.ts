import { spawnSync } from "node:child_process";
import { chmodSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { nodeHost } from "../../src/host/node-host.ts";
import { snapshotFiles } from "../../src/changes/file-snapshot.ts";
import { statWalk } from "../../src/changes/stat-walk.ts";

const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

// Deno's lstat rounds file times (to the millisecond, ctime to the second): there an entry recorded by stat
// differs between the two ways, and only its presence is compared (a run lists with find throughout)
const bySameClock = (files: Record<string, string>) => ("Deno" in globalThis ? Object.fromEntries(Object.entries(files).map(([k, v]) => [k, /^\d+:/.test(v) ? "stat" : v])) : files);

describe("a snapshot listed by find", () => {
  it("records what the walk in JavaScript records: files, links, modes, special files, skipped and stat-only folders", () => {
    const d = mkdtempSync(join(tmpdir(), "phaseloop-walk-"));
    dirs.push(d);
    mkdirSync(join(d, "src", "deep"), { recursive: true });
    writeFileSync(join(d, "src", "a.ts"), "a");
    writeFileSync(join(d, "src", "deep", "run.sh"), "#!/bin/sh\n");
    chmodSync(join(d, "src", "deep", "run.sh"), 0o755);
    writeFileSync(join(d, "sp ace é\ttab"), "odd name");
    writeFileSync(join(d, "new\nline"), "odd name");
    symlinkSync("src/a.ts", join(d, "link"));
    symlinkSync("missing", join(d, "dangling"));
    mkdirSync(join(d, "node_modules", "pkg"), { recursive: true });
    writeFileSync(join(d, "node_modules", "pkg", "index.js"), "x");
    mkdirSync(join(d, "sub", "node_modules"), { recursive: true });
    writeFileSync(join(d, "sub", "node_modules", "m.js"), "x");
    mkdirSync(join(d, ".phaseloop"));
    writeFileSync(join(d, ".phaseloop", "state.json"), "{}");
    writeFileSync(join(d, "sub", ".git"), "gitdir: elsewhere\n"); // a file named .git is a file
    spawnSync("mkfifo", [join(d, "pipe")]);
    expect(statWalk(nodeHost.processes, d, new Set(), () => {})).toBe(true); // GNU find, as on every machine phaseloop is tested on
    for (const options of [{ skip: new Set([".phaseloop"]), statOnly: new Set(["node_modules"]) }, { skip: new Set([".git", "node_modules", ".phaseloop"]) }, { skip: new Set<string>(), hash: false }]) {
      const listed = snapshotFiles(nodeHost, d, options);
      const walked = snapshotFiles(nodeHost, d, options, "p/");
      expect(bySameClock(listed)).toEqual(bySameClock(Object.fromEntries(Object.entries(walked).map(([k, v]) => [k.slice(2), v]))));
      expect(Object.keys(listed)).toContain("sp ace é\ttab");
      expect(Object.keys(listed)).toContain("new\nline");
    }
  });
});
