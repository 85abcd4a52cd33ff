import type { Scope, Shape } from "../expr/index.ts";
import type { PipelineDoc } from "./spec.ts";

const any: Shape = { kind: "any" };
const str: Shape = { kind: "string" };
const num: Shape = { kind: "number" };
const obj = (fields: Record<string, Shape>, extra: Partial<Extract<Shape, { kind: "object" }>> = {}): Shape => ({ kind: "object", fields, ...extra });
const arr = (items: Shape): Shape => ({ kind: "array", items });

export type ScopeKind =
  /** `when` and `stop.when`: no current phase. */
  | "global"
  /** A phase's `next` rules, `reason`s and output templates: the current phase's result is bare. */
  | "phase-result"
  /** A phase's prompt, run command and env: before it runs. */
  | "phase-input"
  /** An agent's command: prompt and prompt_file too. */
  | "agent-command";

const taskShape = obj({ id: str, title: str, body: str, status: str, attempts: num, priority: any, depends_on: arr(str), notes: arr(str) }, { open: true });

/**
 * The shape of the context expressions see (src/pipeline/context.ts), built
 * from the document: phases, outputs and params are closed, so a typo is an
 * error located in the file.
 */
const baseScopes = new WeakMap<object, { scope: Scope; phases: Record<string, Shape> }>();

export function buildScope(doc: Partial<PipelineDoc>, kind: ScopeKind, phaseName?: string): Scope {
  // the shared part is built once per document: a 1,000-phase pipeline checks
  // thousands of expressions against it
  let base = baseScopes.get(doc);
  if (!base) baseScopes.set(doc, (base = buildBaseScope(doc)));
  const scope: Scope = { ...base.scope };
  if (kind === "phase-result" && phaseName !== undefined) {
    const own = base.phases[phaseName] as Extract<Shape, { kind: "object" }> | undefined;
    scope.status = str;
    scope.exit_code = any;
    scope.output = own?.fields.output ?? obj({}, { open: true });
    scope.text = str;
    scope.error = any;
    scope.attempts = num;
    scope.answer = any;
  }
  if (kind === "agent-command") {
    scope.prompt = str;
    scope.prompt_file = str;
  }
  return scope;
}

function buildBaseScope(doc: Partial<PipelineDoc>): { scope: Scope; phases: Record<string, Shape> } {
  const phases: Record<string, Shape> = {};
  for (const [name, phase] of Object.entries(doc.phases ?? {})) phases[name] = phaseShape(Array.isArray(phase?.parallel) ? GROUP_OUTPUT : typeof phase?.pipeline === "string" ? SUB_PIPELINE_OUTPUT : phase?.output);
  const params: Record<string, Shape> = {};
  for (const [name, p] of Object.entries(doc.params ?? {})) {
    params[name] = p?.type === "string" ? str : p?.type === "boolean" ? { kind: "boolean" } : p?.type ? num : any;
  }
  const scope: Scope = {
    iteration: num,
    params: obj(params, { unknownCode: "EXPR_UNKNOWN_PARAM", what: "param" }),
    phases: obj(phases, { unknownCode: "EXPR_UNKNOWN_PHASE", what: "phase" }),
    changes: arr(str),
    history: arr(any),
    files: obj({}, { open: true }),
    last_failure: any,
    run: obj({ id: str, tokens: num, cost_usd: num, elapsed_ms: num, artifacts: str }),
    task: taskShape,
    tasks: obj({ total: num, done: num, blocked: num, pending: num, items: arr(taskShape) }),
    env: obj({}, { open: true }),
    pipeline: obj({ name: str, file: str, dir: str }),
    workdir: str,
  };
  return { scope, phases };
}

/** A sub-pipeline's output: how the child ended, and its phases' results. */
const SUB_PIPELINE_OUTPUT = { outcome: { json: true }, reason: { json: true }, code: { json: true }, iterations: { json: true }, phases: { json: true } } as const;

/** A parallel group's output: its members by how they ended. */
const GROUP_OUTPUT = { succeeded: { json: true }, failed: { json: true }, skipped: { json: true } } as const;

function phaseShape(output: PipelineDoc["phases"][string]["output"] | undefined): Shape {
  const outputs: Record<string, Shape> = {};
  for (const name of Object.keys(output ?? {})) outputs[name] = any;
  return obj({
    status: str,
    exit_code: any,
    output: obj(outputs, { unknownCode: "EXPR_UNKNOWN_OUTPUT", what: "output" }),
    text: str,
    error: any,
    attempts: num,
    duration_ms: num,
    tokens: num,
    cost_usd: num,
    iteration: num,
    message: any,
    denied: arr(str),
    answer: any,
  });
}
