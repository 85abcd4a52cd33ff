import { describe, expect, it } from "vitest";
import { exportTarget, parseBare, relativePath, resolveSpecifier } from "../../src/pipeline/resolve-specifier.ts";

const host = (files: Record<string, string>, cwd = "/w") => ({ cwd, readFile: async (p: string) => files[p] });

describe("resolveSpecifier", () => {
  it("resolves ./ and ../ against the naming file", async () => {
    expect(await resolveSpecifier("./b.yaml", "/w/x/a.yaml", host({}))).toEqual({ ok: true, file: "/w/x/b.yaml" });
    expect(await resolveSpecifier("../b.yaml", "x/a.yaml", host({}))).toEqual({ ok: true, file: "b.yaml" });
  });

  it("walks up from the naming file's folder to the nearest node_modules holding the package", async () => {
    const files = {
      "/w/node_modules/team-loops/package.json": JSON.stringify({ version: "1.0.0" }),
      "/w/a/node_modules/team-loops/package.json": JSON.stringify({ version: "2.0.0" }),
    };
    expect(await resolveSpecifier("team-loops/x.yaml", "/w/a/b/p.yaml", host(files))).toMatchObject({ ok: true, file: "/w/a/node_modules/team-loops/x.yaml", package: { name: "team-loops", version: "2.0.0" } });
    expect(await resolveSpecifier("team-loops/x.yaml", "c/p.yaml", host(files))).toMatchObject({ ok: true, file: "/w/node_modules/team-loops/x.yaml", package: { version: "1.0.0" } });
  });

  it("never reads a URL", async () => {
    for (const url of ["https://x.dev/a.yaml", "git+ssh://x/a.yaml", "npm:pkg/a.yaml", "jsr:@a/b/c.yaml"]) {
      expect(await resolveSpecifier(url, "/w/p.yaml", host({}))).toMatchObject({ ok: false });
    }
  });

  it("refuses an export that points outside the package", async () => {
    const files = { "/w/node_modules/p/package.json": JSON.stringify({ exports: { "./x.yaml": "../../secret.yaml" } }) };
    expect(await resolveSpecifier("p/x.yaml", "/w/p.yaml", host(files))).toMatchObject({ ok: false });
  });
});

describe("exports, as Node reads them", () => {
  it("exact subpaths, patterns (longest prefix wins), conditions, null exclusions and folders", () => {
    const exports = {
      ".": "./index.js",
      "./*.yaml": "./pipelines/*.yaml",
      "./private/*.yaml": null,
      "./special/*.yaml": { phaseloop: "./sp/*.yaml", default: "./no/*.yaml" },
      "./cond.yaml": { types: "./t.d.ts", import: "./c.yaml" },
      "./list.yaml": [{ worker: "./w.yaml" }, "./l.yaml"],
      "./old/": "./legacy/",
    };
    expect(exportTarget(exports, "./a.yaml")).toBe("./pipelines/a.yaml");
    expect(exportTarget(exports, "./private/a.yaml")).toBeNull();
    expect(exportTarget(exports, "./special/a.yaml")).toBe("./sp/a.yaml");
    expect(exportTarget(exports, "./cond.yaml")).toBe("./c.yaml");
    expect(exportTarget(exports, "./list.yaml")).toBe("./l.yaml");
    expect(exportTarget(exports, "./old/x/y.json")).toBe("./legacy/x/y.json");
    expect(exportTarget(exports, "./a.json")).toBeUndefined();
    expect(exportTarget("./index.js", "./a.yaml")).toBeUndefined();
  });

  it("parses package paths", () => {
    expect(parseBare("@acme/loops/a/b.yaml")).toEqual({ name: "@acme/loops", subpath: "./a/b.yaml" });
    expect(parseBare("loops/b.yaml")).toEqual({ name: "loops", subpath: "./b.yaml" });
    expect(parseBare("loops/../b.yaml")).toBeUndefined();
  });

  it("relative paths between folders", () => {
    expect(relativePath("/a/b", "/a/c/d")).toBe("../c/d");
    expect(relativePath("a", "a")).toBe(".");
    expect(relativePath(".", "node_modules/x")).toBe("node_modules/x");
    expect(relativePath("/a", "b")).toBeUndefined();
  });
});
