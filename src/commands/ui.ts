/**
 * `phaseloop ui [--workdir DIR] [--port N] [--host H] [--open]`: a live page
 * of the workdir's runs. Prints the address to open (with its token) and
 * serves until Ctrl-C.
 */
import { resolve } from "node:path";
import process from "node:process";
import type { Host } from "../host/host.ts";
import { parseCommandArgs, writerOf, type CommandIo } from "../reporters/command-io.ts";
import { hostOf } from "./cli-io.ts";

const USAGE = "Usage: phaseloop ui [options]";

const HELP = `${USAGE}

Serves a live page of the workdir's runs: the runs list, and for each run its
graph with the path taken, the iterations as a timeline, the running phase's
output, every phase's prompt, values, changes, refusals and violations, tokens
and cost, and the controls: answer a question, stop a run, resume a stopped
one. It prints the address to open, with a token in it; nothing is served
without the token. Ctrl-C stops the server; the runs go on.

Options:
  --workdir DIR   whose runs (default: .)
  --port N        the port to listen on (default: one the OS picks)
  --host H        listen on H instead of 127.0.0.1 (a warning says what that
                  means)
  --open          open the page in the browser
  -h, --help      this text
`;

export interface UiOptions {
  /** Resolves when the server should stop (default: SIGINT or SIGTERM). */
  until?: Promise<void>;
}

export async function main(argv: string[], io: CommandIo & { host?: Host }, options: UiOptions = {}): Promise<number> {
  const machine = hostOf(io);
  const out = writerOf(io.stdout);
  const err = writerOf(io.stderr);
  const parsed = parseCommandArgs(argv, ["--open", "--help", "-h"], ["--workdir", "--port", "--host"]);
  if (!parsed.ok || parsed.args.positionals.length > 0) {
    err(`phaseloop ui: ${parsed.ok ? `unexpected argument "${parsed.args.positionals[0]}"` : parsed.message}\n${USAGE}\n`);
    return 2;
  }
  const { args } = parsed;
  if (args.flags.has("--help") || args.flags.has("-h")) {
    out(HELP);
    return 0;
  }
  const portText = args.values.get("--port") ?? "0";
  const port = Number(portText);
  if (!/^\d+$/.test(portText) || port > 65535) {
    err(`phaseloop ui: --port must be a number from 0 to 65535, got "${portText}"\n${USAGE}\n`);
    return 2;
  }
  const host = args.values.get("--host") ?? "127.0.0.1";
  const workdir = resolve(io.cwd ?? process.cwd(), args.values.get("--workdir") ?? ".");
  const { startUiServer } = await import("../ui/ui-server.ts");
  const { uiControls } = await import("../ui/ui-controls.ts");
  let server;
  try {
    server = await startUiServer({ workdir, host, port, controls: uiControls(workdir, machine), machine });
  } catch (error) {
    err(`phaseloop ui: cannot listen on ${host}:${port}: ${(error as Error).message}\n`);
    return 2;
  }
  if (!isLoopback(host)) {
    err(`phaseloop ui: warning: listening on ${host}, not on loopback: anyone who can reach this address and has the token can see and steer the runs of ${workdir}\n`);
  }
  out(`phaseloop ui: the runs of ${workdir}\n${server.url}\n`);
  if (args.flags.has("--open")) openBrowser(machine, server.url, err);
  const until =
    options.until ??
    new Promise<void>((done) => {
      process.once("SIGINT", () => done());
      process.once("SIGTERM", () => done());
    });
  await until;
  await server.close();
  return 0;
}

function isLoopback(host: string): boolean {
  return host === "127.0.0.1" || host === "::1" || host === "localhost" || /^127\./.test(host);
}

function openBrowser(machine: Host, url: string, err: (text: string) => void): void {
  const command = process.platform === "darwin" ? "open" : process.platform === "win32" ? "explorer" : "xdg-open";
  try {
    const child = machine.processes.detach({ command: [command, url] });
    void child.exited.then((code) => {
      if (code === null) err(`phaseloop ui: could not start ${command}; open the address above yourself\n`);
    });
  } catch {
    err(`phaseloop ui: could not start ${command}; open the address above yourself\n`);
  }
}
