/**
 * Which folders a parallel member stages, and how each entry of a staged folder appears in
 * its fence. The rule that makes staging sound: whatever a set of globs matches, every
 * folder on its way is reached by them, so no folder another member may write is ever
 * judged out of its reach (which would let this member write it directly).
 */
import fc from "fast-check";
import picomatch from "picomatch";
import { describe, expect, it } from "vitest";
import { bwrapArgs } from "../../src/sandbox/bwrap-args.ts";
import { compileSandbox } from "../../src/sandbox/compile-sandbox.ts";
import { mustStage, planEntry, reach } from "../../src/sandbox/member-stage.ts";

describe("reach", () => {
  it("as met: src/a.txt against src/b*.txt", () => {
    expect(reach(["src/b*.txt"], "src")).toBe("within");
    expect(reach(["src/a.txt"], "src")).toBe("ancestor");
    expect(reach(["src/a.txt"], "src/a.txt")).toBe("within");
    expect(reach(["src/a.txt"], "src/b.txt")).toBe("none");
    expect(reach(["src/a.txt"], "lib")).toBe("none");
    expect(reach(["**/*.ts"], "anything/at/all")).toBe("within");
    expect(reach(["./docs/*.md"], "")).toBe("ancestor");
    expect(reach(["../x"], "")).toBe("none");
    expect(mustStage("src", ["src/b*.txt"])).toBe(true);
    expect(mustStage("src", ["lib/**"])).toBe(false);
    expect(mustStage("", ["lib/**"])).toBe(true);
  });

  const part = fc.constantFrom("src", "lib", "a.txt", "b.ts", "x", ".hidden", "deep");
  const globPart = fc.oneof(part, fc.constantFrom("*", "**", "*.ts", "b*", "{a,b}.txt", "?.md"));
  const glob = fc.array(globPart, { minLength: 1, maxLength: 4 }).map((p) => p.join("/"));
  const path = fc.array(part, { minLength: 1, maxLength: 5 }).map((p) => p.join("/"));

  it("every path a glob matches is within its reach, and every folder on the way reached", () => {
    fc.assert(
      fc.property(fc.array(glob, { minLength: 1, maxLength: 3 }), path, (globs, p) => {
        if (!picomatch(globs, { dot: true })(p)) return;
        expect(reach(globs, p)).toBe("within");
        const parts = p.split("/");
        for (let i = 0; i < parts.length; i++) expect(reach(globs, parts.slice(0, i).join("/"))).not.toBe("none");
      }),
      { numRuns: 3000 },
    );
  });
});

describe("planEntry", () => {
  it("read-only where the member cannot write, its own folder as itself, a shared one copied or descended", () => {
    const own = ["src/a.txt", "reports/a/**"];
    const others = ["src/b*.txt", "reports/b/**"];
    expect(planEntry("src/a.txt", "file", own, others)).toBe("copy");
    expect(planEntry("src/b.txt", "file", own, others)).toBe("readonly");
    expect(planEntry("src/lib", "dir", own, others)).toBe("readonly");
    expect(planEntry("reports", "dir", own, others)).toBe("descend");
    expect(planEntry("reports/a", "dir", own, others)).toBe("direct");
    expect(planEntry(".git", "dir", ["**"], others)).toBe("readonly");
    expect(planEntry(".phaseloop", "dir", ["**"], others)).toBe("readonly");
    expect(planEntry("fifo", "other", ["**"], others)).toBe("readonly");
  });

  it("never binds a folder writable that another member's globs may reach", () => {
    const globs = fc.array(fc.constantFrom("src/a.txt", "src/b*.txt", "src/**/*.ts", "docs/*.md", "**/*.md", "reports/x/**", "x.txt"), { minLength: 1, maxLength: 3 });
    const dir = fc.constantFrom("", "src", "src/lib", "docs", "reports", "reports/x", "reports/y", "other");
    fc.assert(
      fc.property(globs, globs, dir, (own, others, rel) => {
        if (planEntry(rel, "dir", own, others) === "direct") expect(reach(others, rel)).toBe("none");
      }),
    );
  });
});

describe("bwrapArgs with a staged folder", () => {
  it("binds the copy in the folder's place, then the real entries read-only or writable inside it, before the protected names", () => {
    const profile = { ...compileSandbox({ workdir: "/w", home: "/h", tempDir: "/t/p", write: ["src/a.txt"], agent: "command" }), staged: [{ real: "/w/src", stage: "/t/stage-1", readonly: ["/w/src/lib"], direct: ["/w/src/own"] }] };
    const { args } = bwrapArgs({ profile, cwd: "/w", command: ["true"], exports: {}, seccomp: { hex: "00", fd: 3 }, socat: "socat", nestedProtected: [], kindOf: (p) => (p.includes(".") && !p.endsWith("/.git") ? undefined : "dir") });
    const at = args.indexOf("/t/stage-1");
    expect(args.slice(at - 1, at + 8)).toEqual(["--bind", "/t/stage-1", "/w/src", "--ro-bind", "/w/src/lib", "/w/src/lib", "--bind", "/w/src/own", "/w/src/own"]);
    expect(args.indexOf("/w/src", at + 1)).toBeGreaterThan(at);
    expect(args.filter((a, i) => a === "--bind" && args[i + 2] === "/w/src")).toHaveLength(1);
  });
});
