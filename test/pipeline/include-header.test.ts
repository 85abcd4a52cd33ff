// A shared catalogue may say which format it is written in (phaseloop: 1, checked) and what
// it is (name, description: informational); before, any of them refused the file with
// INCLUDE_KEY, and every pipeline built on it.
import { describe, expect, it } from "vitest";
import { loadPipeline } from "../../src/pipeline/load-pipeline.ts";

const host = (files: Record<string, string>) => ({ cwd: "/repo", readFile: async (p: string) => files[p.startsWith("/") ? p : `/repo/${p}`.replace(/\/\.\//g, "/")] });
const catalogue = (head: string) => `${head}agents:\n  worker: { command: [sh, -c, "cat > /dev/null"] }\ntools:\n  edit: { read: ["**"], write: ["src/**"] }\n`;
const base = `phaseloop: 1
name: team-base
include: [./catalogue.yaml]
phases:
  work:
    agent: worker
    tools: edit
    prompt: Do the work.
    next:
      - if: exit_code == 0
        stop: complete
stop: { max_iterations: 3 }
`;
const ours = `phaseloop: 1\nname: ours\nextends: ./team/base.yaml\nstop: { max_iterations: 5 }\n`;

describe("an included catalogue's header", () => {
  it("phaseloop: 1, a name and a description are accepted, by the includer and by what extends it", async () => {
    const files = { "/repo/team/catalogue.yaml": catalogue("phaseloop: 1\nname: team agents\ndescription: The agents and tool sets our team shares.\n"), "/repo/team/base.yaml": base, "/repo/p.yaml": ours };
    const direct = await loadPipeline("team/base.yaml", host(files));
    expect(direct.diagnostics.filter((d) => d.severity === "error")).toEqual([]);
    const built = await loadPipeline("p.yaml", host(files));
    expect(built.diagnostics.filter((d) => d.severity === "error")).toEqual([]);
    // the catalogue's name is its own: the pipeline keeps its name
    expect(built.doc!.name).toBe("ours");
    expect(built.doc!.agents!.worker!.command).toEqual(["sh", "-c", "cat > /dev/null"]);
  });

  it("another format version is refused at the catalogue's version", async () => {
    const text = catalogue("phaseloop: 2\n");
    const l = await loadPipeline("team/base.yaml", host({ "/repo/team/catalogue.yaml": text, "/repo/team/base.yaml": base }));
    expect(l.diagnostics.filter((d) => d.severity === "error")).toEqual([expect.objectContaining({ code: "SCHEMA_VERSION", file: "team/catalogue.yaml" })]);
  });

  it("a name that is not a string is located in the catalogue; other keys are still refused", async () => {
    const l = await loadPipeline("team/base.yaml", host({ "/repo/team/catalogue.yaml": catalogue("name: [a]\nphases: {}\n"), "/repo/team/base.yaml": base }));
    expect(l.diagnostics.filter((d) => d.severity === "error").map((d) => d.code).sort()).toEqual(["INCLUDE_KEY", "SCHEMA_TYPE"]);
  });
});
