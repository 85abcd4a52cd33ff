/**
 * What the schema's phase-kind constraints mean, in words: a phase is one
 * kind (agent, run, ask, …) and each kind refuses the keys of the others.
 * The schema says only "not" or "false schema"; these read the phase itself.
 */
const KINDS = ["agent", "run", "ask", "parallel", "pipeline"] as const;

function kindsOf(phase: unknown): string[] {
  if (!phase || typeof phase !== "object") return [];
  return KINDS.filter((k) => k in (phase as Record<string, unknown>));
}

/** A phase holding the keys of two kinds. */
export function mixedKindsMessage(phase: unknown): { message: string; hint: string } {
  const kinds = kindsOf(phase);
  if (kinds.length < 2) return { message: "a phase is one kind: an agent, a run, an ask, a parallel group or a pipeline", hint: "keep the keys of one kind" };
  const a = (k: string) => `${k === "agent" || k === "ask" ? "an" : "a"} ${k} phase`;
  return { message: `a phase has either "${kinds[0]}" or "${kinds[1]}", not both`, hint: `split it into ${a(kinds[0]!)} and ${a(kinds[1]!)}` };
}

/** A key a phase of its kind does not take. */
export function refusedKeyMessage(phase: unknown, key: string): { message: string; hint: string } {
  if (key === "exhausted") return { message: `"exhausted" needs "max_visits"`, hint: "add max_visits: N, the entries per iteration after which exhausted applies" };
  // the kinds that refuse keys: ask (and the kinds without a process) before run
  const kinds = kindsOf(phase);
  const kind = kinds.find((k) => k !== "agent" && k !== "run") ?? (kinds.includes("run") ? "run" : (kinds[0] ?? "run"));
  const hint = kind === "run" ? (key === "tools" ? "tool sets apply to agent phases" : "a run phase has no prompt; give it an agent instead") : `an ${kind} phase runs no agent or command`;
  return { message: `"${key}" is not allowed in ${kind === "agent" || kind === "ask" ? "an" : "a"} ${kind} phase`, hint };
}
