/**
 * Which JSON Schema an agent is asked to enforce itself (claude `--json-schema`,
 * codex `--output-schema`, the built-in agent's `response_format`): that of the
 * phase's one `json: true` output with a `schema`. Claude returns the answer
 * beside its own text, so every other output still reads that text. Codex and
 * the built-in agent answer a schema with the JSON as their final message: they
 * are asked only when no other output reads that message (a `match`, `tag`,
 * `section` or second `json` output); otherwise the answer is read from their
 * free text and validated afterwards, like any output with a schema.
 */
import type { OutputSpec } from "../pipeline/spec.ts";
import { presetNamed } from "../pipeline/presets/registry.ts";

export function nativeOutputSchema(outputs: Record<string, OutputSpec>, preset: string | undefined): Record<string, unknown> | undefined {
  const structured = Object.values(outputs).filter((o) => o.json === true && o.schema);
  if (structured.length !== 1) return undefined;
  const schema = structured[0]!.schema as Record<string, unknown>;
  // a preset whose structured answer is kept apart from the final message (its `answerBesideText`)
  if (presetNamed(preset)?.answerBesideText) return schema;
  const readsMessage = Object.values(outputs).filter((o) => o.file === undefined && (o.from ?? "text") === "text");
  return readsMessage.length === 1 && readsMessage[0] === structured[0] ? schema : undefined;
}
