import { describe, expect, it } from "vitest";
import { resolveParams } from "../../src/machine/resolve-params.ts";
import type { ParamSpec } from "../../src/pipeline/spec.ts";
import { compile } from "./helpers.ts";

const machine = (params: Record<string, ParamSpec>, stop: Record<string, unknown> = {}) => compile({ params, phases: { a: { run: "true" } }, stop: { max_iterations: 2, ...stop } } as never);

describe("resolving params", () => {
  it("converts --param text to the declared types", () => {
    const m = machine({ s: { type: "string" }, n: { type: "number" }, i: { type: "integer" }, b: { type: "boolean" }, off: { type: "boolean" } });
    const r = resolveParams(m, { s: "a b", n: "1.5", i: "-3", b: "yes", off: "0" });
    expect(r.diagnostics).toEqual([]);
    expect(r.params).toEqual({ s: "a b", n: 1.5, i: -3, b: true, off: false });
  });

  it("fills defaults and leaves optional params without a value empty", () => {
    const m = machine({ d: { type: "integer", default: 7 }, o: { type: "string", required: false, enum: ["x", "y"] }, ob: { type: "boolean", required: false } });
    expect(resolveParams(m, {})).toEqual({ params: { d: 7, o: "", ob: false }, diagnostics: [] });
  });

  it("refuses values of the wrong type", () => {
    const m = machine({ n: { type: "number" }, i: { type: "integer" }, b: { type: "boolean" } });
    for (const raw of [{ n: "abc" }, { n: "" }, { i: "1.5" }, { b: "maybe" }, { n: "Infinity" }]) {
      const r = resolveParams(m, { n: "1", i: "1", b: "true", ...raw });
      expect(r.diagnostics.map((d) => d.code)).toEqual(["PARAM_INVALID"]);
    }
  });

  it("reports a required param that is missing, with how to pass it", () => {
    const r = resolveParams(machine({ goal: { type: "string", description: "what to build" } }), {});
    expect(r.diagnostics).toHaveLength(1);
    expect(r.diagnostics[0]).toMatchObject({ code: "PARAM_INVALID", severity: "error" });
    expect(r.diagnostics[0]!.hint).toContain("--param goal=");
  });

  it("refuses an unknown param and suggests the closest name", () => {
    const r = resolveParams(machine({ target: { type: "string", default: "x" } }), { traget: "y" });
    expect(r.diagnostics.map((d) => d.code)).toEqual(["PARAM_INVALID"]);
    expect(r.diagnostics[0]!.hint).toContain("target");
  });

  it("checks enums after conversion", () => {
    const m = machine({ mode: { type: "string", enum: ["fast", "slow"], default: "fast" }, level: { type: "integer", enum: [1, 2] , default: 1 } });
    expect(resolveParams(m, { mode: "slow", level: "2" }).params).toEqual({ mode: "slow", level: 2 });
    const bad = resolveParams(m, { mode: "fsat", level: "3" });
    expect(bad.diagnostics.map((d) => d.code)).toEqual(["PARAM_INVALID", "PARAM_INVALID"]);
    expect(bad.diagnostics[0]!.hint).toContain("fast");
  });

  it("resolves limits given as templates, refusing ones that are not whole numbers", () => {
    const m = machine({ n: { type: "integer", default: 3 }, t: { type: "string", default: "x" } }, { max_iterations: "{{ params.n }}", no_progress: "{{ params.t }}" });
    expect(resolveParams(m, { t: "2" }).diagnostics).toEqual([]);
    expect(resolveParams(m, {}).diagnostics.map((d) => d.code)).toEqual(["PARAM_INVALID"]);
    expect(resolveParams(m, { n: "0", t: "2" }).diagnostics.map((d) => d.code)).toEqual(["PARAM_INVALID"]);
  });
});
