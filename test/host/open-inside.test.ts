import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { afterAll, describe, expect, it } from "vitest";
import { AGENT_PROTECTED, placeInside, readInside, writeInside } from "../../src/host/open-inside.ts";

const base = mkdtempSync(join(tmpdir(), "phaseloop-inside-"));
afterAll(() => rmSync(base, { recursive: true, force: true }));

/** A workdir with git data, phaseloop state and a sibling outside, each holding a secret. */
function tree(): { root: string; work: string } {
  const root = mkdtempSync(join(base, "t-"));
  const work = join(root, "work");
  for (const d of ["work/src/deep", "work/.git/hooks", "work/.phaseloop/runs", "outside/dir"]) mkdirSync(join(root, d), { recursive: true });
  writeFileSync(join(work, "src/a.txt"), "plain a");
  writeFileSync(join(work, "src/deep/b.txt"), "plain b");
  writeFileSync(join(work, ".git/config"), "SECRET git config");
  writeFileSync(join(work, ".git/hooks/pre-commit"), "SECRET hook");
  writeFileSync(join(work, ".phaseloop/lock"), "SECRET lock");
  writeFileSync(join(root, "outside/secret.txt"), "SECRET outside");
  writeFileSync(join(root, "outside/dir/x"), "SECRET outside x");
  return { root, work };
}

/** Every file under a folder, with its content. */
function files(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (d: string) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.isFile()) out[p] = readFileSync(p, "utf8");
    }
  };
  if (existsSync(dir)) walk(dir);
  return out;
}

const protect = AGENT_PROTECTED;

describe("placeInside", () => {
  it("refuses .. above the workdir, absolute paths elsewhere, .git at any depth and .phaseloop, whatever their case", () => {
    const { work } = tree();
    for (const p of ["../outside/secret.txt", "src/../../outside", "/etc/passwd", ".git/config", ".GIT/config", "src/.git/x", ".phaseloop/lock", ".PhaseLoop/x"]) {
      expect(placeInside(work, p, { protect }).ok, p).toBe(false);
    }
    expect(placeInside(work, "src/../src/a.txt", { protect })).toMatchObject({ ok: true, rel: "src/a.txt" });
    expect(placeInside(work, join(work, "src/a.txt"), { protect })).toMatchObject({ ok: true, rel: "src/a.txt" });
  });

  it("follows a link that stays inside and refuses one that leads to .git, .phaseloop or out", () => {
    const { work, root } = tree();
    symlinkSync("src", join(work, "docs"));
    symlinkSync(".git", join(work, "g"));
    symlinkSync(join(root, "outside"), join(work, "o"));
    symlinkSync("../../outside/secret.txt", join(work, "src/s"));
    expect(placeInside(work, "docs/a.txt", { protect })).toMatchObject({ ok: true, rel: "src/a.txt" });
    expect(placeInside(work, "g/hooks/post-checkout", { protect }).ok).toBe(false);
    expect(placeInside(work, "o/secret.txt", { protect }).ok).toBe(false);
    expect(placeInside(work, "src/s", { protect }).ok).toBe(false);
  });
});

describe("readInside and writeInside", () => {
  it("never write through a dangling link, nor into a file that is a link", () => {
    const { work, root } = tree();
    symlinkSync(join(root, "outside/new.txt"), join(work, "src/out-new"));
    symlinkSync("missing.txt", join(work, "src/dangling"));
    expect(writeInside(work, "src/out-new", "x", { protect }).ok).toBe(false);
    expect(writeInside(work, "src/dangling", "x", { protect }).ok).toBe(false);
    expect(existsSync(join(root, "outside/new.txt"))).toBe(false);
    expect(existsSync(join(work, "src/missing.txt"))).toBe(false);
  });

  it("read only regular files, and no more than the cap", () => {
    const { work } = tree();
    writeFileSync(join(work, "big.txt"), "x".repeat(5000));
    expect(readInside(work, "big.txt", { maxBytes: 100 })).toMatchObject({ ok: true, truncated: true, text: "x".repeat(100) });
    expect(readInside(work, "src", { maxBytes: 100 }).ok).toBe(false);
    expect(readInside(work, "nope", { maxBytes: 100 })).toMatchObject({ ok: false, missing: true });
  });

  it("write a new file, making its folders, and replace an existing one", () => {
    const { work } = tree();
    expect(writeInside(work, "src/new/dir/c.txt", "hello", { protect })).toMatchObject({ ok: true, rel: "src/new/dir/c.txt", bytes: 5 });
    expect(readFileSync(join(work, "src/new/dir/c.txt"), "utf8")).toBe("hello");
    expect(writeInside(work, "src/a.txt", "b", { protect }).ok).toBe(true);
    expect(readFileSync(join(work, "src/a.txt"), "utf8")).toBe("b");
  });

  it("property: through any tree of symlinks, nothing outside, in .git or in .phaseloop is read or written", () => {
    const names = ["src", "deep", "a.txt", "b.txt", "l1", "l2", "l3", "new.txt", "..", ".", ".git", ".phaseloop", "hooks", "config", "outside", "secret.txt", "dir", "x"];
    const component = fc.constantFrom(...names);
    const relPath = fc.array(component, { minLength: 1, maxLength: 5 }).map((c) => c.join("/"));
    const target = fc.oneof(relPath, relPath.map((p) => `../${p}`), relPath.map((p) => `../../${p}`), fc.constantFrom("/etc", "/tmp", ".git", "../.git/hooks", "../../outside/dir"));
    const link = fc.record({ at: fc.constantFrom("l1", "l2", "l3", "src/l1", "src/deep/l2", "src/l3"), to: target, absolute: fc.boolean() });
    const op = fc.record({ write: fc.boolean(), path: relPath });
    fc.assert(
      fc.property(fc.array(link, { maxLength: 6 }), fc.array(op, { minLength: 1, maxLength: 8 }), (links, ops) => {
        const { root, work } = tree();
        for (const l of links) {
          try {
            symlinkSync(l.absolute && !l.to.startsWith("/") ? join(work, l.to) : l.to, join(work, l.at));
          } catch {
            // the place is taken: fine
          }
        }
        const guarded = () => ({ ...files(join(root, "outside")), ...files(join(work, ".git")), ...files(join(work, ".phaseloop")) });
        const before = guarded();
        for (const o of ops) {
          if (o.write) writeInside(work, o.path, "WRITTEN", { protect });
          else {
            const r = readInside(work, o.path, { protect, maxBytes: 1000 });
            if (r.ok) expect(r.text).not.toContain("SECRET");
          }
        }
        expect(guarded()).toEqual(before);
        expect(readdirSync(root).sort()).toEqual(["outside", "work"]);
        // nothing the writes made is anything but a plain file or folder inside the workdir
        expect(statSync(work).isDirectory()).toBe(true);
      }),
      { numRuns: 150 },
    );
  });
});
