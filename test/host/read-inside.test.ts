import { mkdirSync, mkdtempSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { readInside } from "../../src/host/read-inside.ts";

const workdir = () => {
  const dir = mkdtempSync(join(tmpdir(), "phaseloop-read-"));
  mkdirSync(join(dir, "docs"));
  writeFileSync(join(dir, "docs/TASK.md"), "the task\n");
  return dir;
};

describe("readInside", () => {
  it("reads a file inside the workdir", () => {
    const dir = workdir();
    expect(readInside(dir, "docs/TASK.md", 1000)).toBe("the task\n");
    expect(readInside(dir, "./docs/../docs/TASK.md", 1000)).toBe("the task\n");
  });
  it("refuses paths that leave the workdir: .., absolute elsewhere, a link out", () => {
    const dir = workdir();
    const outside = mkdtempSync(join(tmpdir(), "phaseloop-out-"));
    writeFileSync(join(outside, "secret"), "s");
    symlinkSync(join(outside, "secret"), join(dir, "link"));
    symlinkSync(outside, join(dir, "dirlink"));
    for (const p of ["../x", join(outside, "secret"), "link", "dirlink/secret"]) expect(() => readInside(dir, p, 100), p).toThrow(/outside the workdir/);
    expect(readInside(dir, join(dir, "docs/TASK.md"), 100)).toBe("the task\n");
  });
  it("says what is wrong with a missing file, a directory, an empty path", () => {
    const dir = workdir();
    expect(() => readInside(dir, "nope.md", 100)).toThrow("no such file in the workdir");
    expect(() => readInside(dir, "docs", 100)).toThrow("not a regular file");
    expect(() => readInside(dir, " ", 100)).toThrow("no path given");
  });
  it("reads at most the cap, cut on a character boundary, and says so", () => {
    const dir = workdir();
    writeFileSync(join(dir, "big.md"), "é".repeat(1000));
    const text = readInside(dir, "big.md", 101);
    expect(text).toBe(`${"é".repeat(50)}\n… (big.md cut at 101 bytes of 2000)`);
    expect(readInside(dir, "big.md", 2000)).toBe("é".repeat(1000));
  });
});
