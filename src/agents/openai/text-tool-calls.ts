/**
 * Local models often answer a tool call in their text instead of the API's
 * `tool_calls` field: Hermes/Qwen-style `<tool_call>{…}</tool_call>` blocks, or
 * a reply that is nothing but `{"name": …, "arguments": {…}}` (bare or in a
 * fenced code block). These are read as the calls they are, but only for
 * tools the phase offers. Pure; never throws.
 */
export interface TextToolCall {
  name: string;
  /** The arguments as a JSON string, as the API would send them. */
  arguments: string;
}

const TAGGED = /<tool_call>\s*([\s\S]*?)\s*<\/tool_call>/g;
const FENCED = /^\s*```(?:json)?\s*([\s\S]*?)\s*```\s*$/;

export function textToolCalls(content: string | null | undefined, toolNames: readonly string[]): TextToolCall[] {
  if (!content || toolNames.length === 0) return [];
  const tagged = [...content.matchAll(TAGGED)].map((m) => asCall(m[1]!, toolNames));
  if (tagged.length > 0) return tagged.filter((c): c is TextToolCall => c !== undefined);
  const whole = FENCED.exec(content)?.[1] ?? content.trim();
  if (!whole.startsWith("{")) return [];
  const call = asCall(whole, toolNames);
  return call ? [call] : [];
}

function asCall(json: string, toolNames: readonly string[]): TextToolCall | undefined {
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch {
    return undefined;
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) return undefined;
  const v = value as Record<string, unknown>;
  const fn = typeof v.function === "object" && v.function !== null ? (v.function as Record<string, unknown>) : v;
  const name = fn.name;
  if (typeof name !== "string" || !toolNames.includes(name)) return undefined;
  const args = fn.arguments ?? fn.parameters ?? {};
  if (typeof args === "string") return { name, arguments: args };
  if (typeof args !== "object" || args === null || Array.isArray(args)) return undefined;
  return { name, arguments: JSON.stringify(args) };
}
