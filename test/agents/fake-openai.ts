import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import process from "node:process";

const SERVER = resolve(import.meta.dirname ?? new URL(".", import.meta.url).pathname, "../fixtures/agents/fake-openai-server.mjs");

export type ScriptedAnswer =
  | { content?: string; tool_calls?: { name: string; arguments: unknown }[]; usage?: Record<string, number>; delay?: number; rejectStream?: boolean }
  | { status: number; body?: string }
  | { hang: true };

export interface FakeServer {
  base: string;
  /** The request bodies received so far. */
  requests(): { url: string; auth: string | null; body: { model: string; messages: { role: string; content: string | null; tool_call_id?: string; tool_calls?: unknown[] }[]; tools?: { function: { name: string } }[] } }[];
  stop(): void;
}

/** A scripted OpenAI-compatible server on loopback, in its own process (so a blocked test process cannot starve it). */
export async function startFakeOpenAi(script: ScriptedAnswer[]): Promise<FakeServer> {
  const dir = mkdtempSync(join(tmpdir(), "phaseloop-openai-"));
  writeFileSync(join(dir, "script.json"), JSON.stringify(script));
  const child: ChildProcess = spawn("node", [SERVER, join(dir, "script.json"), dir], { stdio: "ignore" });
  const portFile = join(dir, "port");
  let port = "";
  for (let i = 0; i < 400 && !port; i++) {
    if (existsSync(portFile)) port = readFileSync(portFile, "utf8").trim();
    if (!port) await new Promise((r) => setTimeout(r, 25));
  }
  if (!port) throw new Error("the fake OpenAI server did not start");
  return {
    base: `http://127.0.0.1:${port}/v1`,
    requests: () => {
      const file = join(dir, "requests.jsonl");
      if (!existsSync(file)) return [];
      return readFileSync(file, "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l));
    },
    stop: () => {
      child.kill("SIGKILL");
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
