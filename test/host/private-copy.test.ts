/** A private copy of a user's folder: never through a link, regular files only, 0600/0700. */
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, readlinkSync, rmSync, statSync, symlinkSync, writeFileSync, lstatSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { copyFilePrivately, copyPrivately, privateFolder } from "../../src/host/private-copy.ts";

const dir = mkdtempSync(join(tmpdir(), "phaseloop-private-copy-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("private copies", () => {
  it("copies files and folders, keeps a link as the link, leaves out what is skipped, special or too large", () => {
    const from = join(dir, "from");
    mkdirSync(join(from, "sub"), { recursive: true });
    mkdirSync(join(from, "history"));
    writeFileSync(join(from, "settings.json"), "{}");
    writeFileSync(join(from, "sub", "token"), "t");
    writeFileSync(join(from, "history", "h"), "h");
    writeFileSync(join(from, "big"), "x".repeat(2000));
    writeFileSync(join(dir, "secret"), "s");
    symlinkSync(join(dir, "secret"), join(from, "link"));
    spawnSync("mkfifo", [join(from, "fifo")]);
    const to = join(dir, "to");
    copyPrivately(from, to, new Set(["history"]), 1000);
    expect(readFileSync(join(to, "settings.json"), "utf8")).toBe("{}");
    expect(readFileSync(join(to, "sub", "token"), "utf8")).toBe("t");
    expect(statSync(join(to, "sub", "token")).mode & 0o777).toBe(0o600);
    expect(statSync(join(to, "sub")).mode & 0o777).toBe(0o700);
    expect(lstatSync(join(to, "link")).isSymbolicLink()).toBe(true);
    expect(readlinkSync(join(to, "link"))).toBe(join(dir, "secret"));
    for (const gone of ["history", "big", "fifo"]) expect(existsSync(join(to, gone)), gone).toBe(false);
  });

  it("never copies through a link, nor over a file already there", () => {
    const target = join(dir, "target");
    writeFileSync(target, "secret");
    symlinkSync(target, join(dir, "via-link"));
    copyFilePrivately(join(dir, "via-link"), join(dir, "copied"), 1000);
    expect(existsSync(join(dir, "copied"))).toBe(false);
    writeFileSync(join(dir, "mine"), "mine");
    copyFilePrivately(target, join(dir, "mine"), 1000);
    expect(readFileSync(join(dir, "mine"), "utf8")).toBe("mine");
  });

  it("makes a private folder of this user's own, and refuses one that is a link", () => {
    const base = join(dir, "base");
    privateFolder(base, join(base, "run"));
    expect(statSync(join(base, "run")).mode & 0o777).toBe(0o700);
    symlinkSync(dir, join(base, "linked"));
    expect(() => privateFolder(base, join(base, "linked"))).toThrow(/not a folder of this user's own/);
  });
});
