/**
 * Runs under `sandbox: required` whose agents try to get out: a command agent and the
 * built-in agent's commands writing outside the workdir and the write scope, reading planted
 * secrets, reaching a loopback server not on the list, leaving a daemon. The real phaseloop
 * CLI, the real OS sandbox. And preflight: required with no sandbox is exit 2 before anything
 * is written; auto without one runs and says so; --sandbox off wins.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { join } from "node:path";
import process from "node:process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { probeSandbox } from "../../src/host/probe-sandbox.ts";
import { startFakeOpenAi, type FakeServer } from "../agents/fake-openai.ts";
import { cliAsync, ensureBuilt, events, git, runDir, tempDir, write } from "../cli/cli-helpers.ts";
import { skipped } from "../skip-reason.ts";

const probe = probeSandbox();
let server: Server;
let port = 0;
let hits = 0;
const fakes: FakeServer[] = [];

beforeAll(async () => {
  ensureBuilt();
  server = createServer((_req, res) => {
    hits++;
    res.end("LOOPBACK-SECRET\n");
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  port = (server.address() as { port: number }).port;
}, 120_000);
afterAll(() => {
  server?.close();
  fakes.forEach((f) => f.stop());
});

/** A workdir (git repo), a fake HOME with planted secrets and dotfiles, and a sibling repo. */
function world() {
  const root = tempDir("phaseloop-sbx-");
  const home = join(root, "home");
  const work = join(root, "repo");
  const sibling = join(root, "sibling");
  for (const d of [join(home, ".ssh"), join(home, ".aws"), join(work, "src"), sibling]) mkdirSync(d, { recursive: true });
  writeFileSync(join(home, ".bashrc"), "original\n");
  writeFileSync(join(home, ".ssh", "id_ed25519"), "PLANTED-SSH-KEY\n");
  writeFileSync(join(home, ".aws", "credentials"), "PLANTED-AWS-KEY\n");
  writeFileSync(join(sibling, "file"), "sibling\n");
  git(work, "init", "-q");
  write(work, { "README.md": "readme\n", "src/a.ts": "export const a = 1;\n" });
  symlinkSync(join(home, ".bashrc"), join(work, "src", "rc-link"));
  return { root, home, work, sibling };
}

function alive(tag: string): string[] {
  return readdirSync("/proc").filter((pid) => {
    try {
      return /^\d+$/.test(pid) && readFileSync(`/proc/${pid}/cmdline`, "utf8").includes(`sleep\0${tag}`);
    } catch {
      return false;
    }
  });
}

const escapePipeline = (script: string, extra = "") => `phaseloop: 1
name: escape
sandbox: required
agents:
  bad: { command: [sh, -c, ${JSON.stringify(script)}] }
tools:
  src: { write: ["src/**"]${extra} }
phases:
  work:
    agent: bad
    prompt: go
    tools: src
    next:
      - if: error == 'policy_violation'
        stop: failed
        reason: "{{ last_failure.message }}"
      - stop: complete
stop: { max_iterations: 1 }
`;

describe.skipIf(skipped(!probe.available, `no OS sandbox here: ${probe.available ? "" : probe.reason}`))("sandbox: required holds for every agent", () => {
  it("a command agent gets nowhere outside its write scope, its secrets or its hosts, and the refusals are a policy_violation naming them", async () => {
    const { home, work, sibling } = world();
    const tag = `${Date.now() % 100000}${process.pid}`;
    const marker = `/tmp/pl-sbx-${tag}`;
    const script = [
      `echo evil >> "$HOME/.bashrc"`,
      `echo evil >> "$HOME/.ssh/authorized_keys"`,
      `echo evil > ${marker}`,
      `echo evil > ../sibling/file`,
      `echo evil > .git/hooks/pre-commit`,
      `echo evil >> README.md`,
      `echo evil >> src/rc-link`,
      `cat "$HOME/.aws/credentials"`,
      `node -e 'require("http").get("http://127.0.0.1:${port}/",r=>r.pipe(process.stdout)).on("error",e=>console.error("connect: "+e.message))'`,
      `curl -sS http://127.0.0.1:${port}/`,
      `curl -sS https://evil.example.com/`,
      `(setsid sh -c 'sleep ${tag}' >/dev/null 2>&1 &)`,
      `echo fine > src/b.ts`,
    ].join("; ");
    write(work, { "p.yaml": escapePipeline(script) });
    const r = await cliAsync(["run", "p.yaml", "--reporter", "plain"], work, { HOME: home }).done;
    expect(r.code, r.stderr).toBe(1);
    // nothing got through
    expect(readFileSync(join(home, ".bashrc"), "utf8")).toBe("original\n");
    expect(existsSync(join(home, ".ssh", "authorized_keys"))).toBe(false);
    expect(existsSync(marker)).toBe(false);
    expect(readFileSync(join(sibling, "file"), "utf8")).toBe("sibling\n");
    expect(existsSync(join(work, ".git", "hooks", "pre-commit"))).toBe(false);
    expect(readFileSync(join(work, "README.md"), "utf8")).toBe("readme\n");
    const stdoutLog = join(runDir(work), "phases/0001-work/stdout.log");
    if (existsSync(stdoutLog)) expect(readFileSync(stdoutLog, "utf8")).not.toMatch(/PLANTED|LOOPBACK-SECRET/);
    expect(hits).toBe(0);
    expect(alive(tag)).toEqual([]);
    // inside the write scope it worked
    expect(readFileSync(join(work, "src", "b.ts"), "utf8")).toBe("fine\n");
    // and each refusal is named
    const ev = events(work);
    const finished = ev.find((e) => e.type === "phase.finished")!;
    expect(finished).toMatchObject({ status: "failed", error: "policy_violation", output: {} });
    expect(String(finished.message)).toMatch(/^the OS sandbox refused write /);
    const refused = ev.find((e) => e.type === "sandbox.refused") as { phase: string; refused: string[] };
    expect(refused.phase).toBe("work");
    const all = refused.refused.join("\n");
    for (const what of [`write ${home}/.bashrc`, `write ${join(sibling, "file")}`, `write ${work}/.git/hooks/pre-commit`, `write ${work}/README.md`, `read ${home}/.aws`, `connect 127.0.0.1:${port}`, "connect evil.example.com"]) expect(all).toContain(what);
    expect(ev.find((e) => e.type === "phase.started")).toMatchObject({ sandbox: true });
    expect(JSON.parse(readFileSync(join(runDir(work), "run.json"), "utf8")).sandbox).toMatchObject({ available: true, phases: { work: "on" } });
  }, 60_000);

  it("a host on tools.network is reachable, and the agent's temp dir is its own", async () => {
    const { home, work } = world();
    // a name nobody else's /tmp holds
    const scratch = `pl-scratch-${process.pid}-${Date.now()}`;
    const script = `curl -sS http://127.0.0.1:${port}/ > src/got.txt && echo x > "$TMPDIR/${scratch}" && echo "$TMPDIR" > src/tmp.txt`;
    write(work, { "p.yaml": escapePipeline(script, `, network: ["127.0.0.1:${port}"]`) });
    const before = hits;
    const r = await cliAsync(["run", "p.yaml", "--reporter", "plain"], work, { HOME: home }).done;
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(readFileSync(join(work, "src", "got.txt"), "utf8")).toBe("LOOPBACK-SECRET\n");
    expect(hits).toBe(before + 1);
    // a private /tmp: the phase's temp dir in the host's /tmp's place, removed with the phase
    const tmp = readFileSync(join(work, "src", "tmp.txt"), "utf8").trim();
    expect(tmp).toBe("/tmp");
    expect(existsSync(`/tmp/${scratch}`)).toBe(false);
  }, 60_000);

  it("the built-in agent's commands run in the sandbox: a command its allowlist lets through still cannot write outside", async () => {
    const { home, work } = world();
    const fake = await startFakeOpenAi([
      { tool_calls: [{ name: "run_command", arguments: { command: `node -e "require('fs').appendFileSync(require('os').homedir()+'/.bashrc','evil')"` } }] },
      { content: "done" },
    ]);
    fakes.push(fake);
    write(work, {
      "p.yaml": `phaseloop: 1
name: builtin
sandbox: required
agents:
  local: { preset: openai, model: m, base_url: "${fake.base}" }
tools:
  build: { read: ["**"], write: ["src/**"], bash: ["node *"] }
phases:
  work:
    agent: local
    tools: build
    prompt: go
    next: [{ stop: complete }]
stop: { max_iterations: 1 }
`,
    });
    const r = await cliAsync(["run", "p.yaml", "--reporter", "plain"], work, { HOME: home }).done;
    expect(r.code).not.toBe(0);
    expect(readFileSync(join(home, ".bashrc"), "utf8")).toBe("original\n");
    const finished = events(work).find((e) => e.type === "phase.finished")!;
    expect(finished).toMatchObject({ error: "policy_violation" });
    expect(String(finished.message)).toContain(`${home}/.bashrc`);
  }, 60_000);

  it("a run phase is sandboxed when it says so: the workdir is writable, .git is not", async () => {
    const { home, work } = world();
    write(work, {
      "p.yaml": `phaseloop: 1
name: verify
phases:
  verify:
    run: "echo built > out.txt; echo evil > .git/hooks/post-checkout; true"
    sandbox: required
    next: [{ if: error == 'policy_violation', stop: failed }, { stop: complete }]
stop: { max_iterations: 1 }
`,
    });
    const r = await cliAsync(["run", "p.yaml", "--reporter", "plain"], work, { HOME: home }).done;
    expect(r.code).toBe(1);
    expect(readFileSync(join(work, "out.txt"), "utf8")).toBe("built\n");
    expect(existsSync(join(work, ".git/hooks/post-checkout"))).toBe(false);
  }, 60_000);
});

describe.skipIf(skipped(!probe.available, `no OS sandbox here: ${probe.available ? "" : probe.reason}`))("a sandboxed run killed mid-phase", () => {
  it.each([
    ["may reach a host (the proxy's bridges and the relay run)", `, network: ["127.0.0.1:9"]`],
    ["may reach no host (no proxy, no relay)", ""],
  ])("leaves nothing running (agent, sandbox, network bridges) when the phase %s, and resumes in the sandbox to the end", async (_, network) => {
    const { home, work } = world();
    const tag = `${Date.now() % 100000}${process.pid}`;
    write(work, {
      "p.yaml": escapePipeline(`test -f src/second || { touch src/second; sleep ${tag}; }; echo done > src/out.txt`, network),
    });
    const preexisting = socats();
    const first = cliAsync(["run", "p.yaml", "--reporter", "plain"], work, { HOME: home });
    const deadline = Date.now() + 30_000;
    while (alive(tag).length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    expect(alive(tag).length).toBe(1);
    const ours = socats().filter((p) => !preexisting.includes(p));
    if (network) expect(ours.length).toBeGreaterThan(0);
    else expect(ours).toEqual([]);
    const fences = bwraps(work);
    expect(fences.length).toBeGreaterThan(0);
    first.child.kill("SIGKILL");
    await first.done;
    const left = () => [...alive(tag), ...socats().filter((p) => ours.includes(p)), ...bwraps(work)];
    const gone = Date.now() + 10_000;
    while (left().length > 0 && Date.now() < gone) await new Promise((r) => setTimeout(r, 100));
    expect(left()).toEqual([]);
    const resumed = await cliAsync(["resume", "--reporter", "plain"], work, { HOME: home }).done;
    expect(resumed.code, resumed.stdout + resumed.stderr).toBe(0);
    expect(readFileSync(join(work, "src", "out.txt"), "utf8")).toBe("done\n");
  }, 90_000);
});

/** The fences (bubblewrap) running now for phases in `work`, not yet reaped. */
function bwraps(work: string): string[] {
  return readdirSync("/proc").filter((pid) => {
    try {
      const cmdline = readFileSync(`/proc/${pid}/cmdline`, "utf8");
      return /^\d+$/.test(pid) && /^(?:[^\0]*\/)?bwrap\0/.test(cmdline) && cmdline.includes(`\0${work}\0`) && !/^State:\s+Z/m.test(readFileSync(`/proc/${pid}/status`, "utf8"));
    } catch {
      return false;
    }
  });
}

/** The sandbox's network bridges running now (socat listening on a proxy socket). */
function socats(): string[] {
  return readdirSync("/proc").filter((pid) => {
    try {
      return /^\d+$/.test(pid) && /^socat\0UNIX-LISTEN:/.test(readFileSync(`/proc/${pid}/cmdline`, "utf8"));
    } catch {
      return false;
    }
  });
}

describe("preflight", () => {
  /** A PATH with node, sh and git but no bubblewrap. */
  function pathWithoutSandbox(root: string): string {
    const bin = join(root, "bin");
    mkdirSync(bin);
    for (const [name, target] of [["node", process.execPath], ["sh", "/bin/sh"], ["git", "/usr/bin/git"], ["cat", "/bin/cat"]] as const) if (existsSync(target)) symlinkSync(target, join(bin, name));
    return bin;
  }

  it("sandbox: required where no sandbox can run is exit 2 at the setting, with why and what to do, and no run folder", async () => {
    const { root, work, home } = world();
    write(work, { "p.yaml": escapePipeline("echo hi") });
    const r = await cliAsync(["run", "p.yaml", "--reporter", "plain"], work, { HOME: home, PATH: pathWithoutSandbox(root) }).done;
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/p\.yaml:3:10: error SANDBOX_UNAVAILABLE sandbox: required, but no OS sandbox can run here: bwrap and socat not found on PATH/);
    expect(r.stderr).toMatch(/hint: install them: apt-get install bubblewrap socat/);
    expect(existsSync(join(work, ".phaseloop", "runs"))).toBe(false);
  }, 60_000);

  it("--sandbox required names the flag; --sandbox off runs it unsandboxed", async () => {
    const { root, work, home } = world();
    write(work, { "p.yaml": escapePipeline("echo hi").replace("sandbox: required\n", "") });
    const PATH = pathWithoutSandbox(root);
    const required = await cliAsync(["run", "p.yaml", "--sandbox", "required"], work, { HOME: home, PATH }).done;
    expect(required.code).toBe(2);
    expect(required.stderr).toContain("error SANDBOX_UNAVAILABLE --sandbox required, but no OS sandbox can run here");
    write(work, { "p.yaml": escapePipeline("echo hi") });
    const off = await cliAsync(["run", "p.yaml", "--sandbox", "off", "--reporter", "plain"], work, { HOME: home, PATH }).done;
    expect(off.code, off.stderr).toBe(0);
    expect(events(work).find((e) => e.type === "phase.started")).toMatchObject({ sandbox: false });
  }, 60_000);

  it("sandbox: auto where none can run goes on, and says so in the live view and run.json", async () => {
    const { root, work, home } = world();
    write(work, { "p.yaml": escapePipeline("echo hi").replace("sandbox: required", "sandbox: auto") });
    const r = await cliAsync(["run", "p.yaml", "--reporter", "plain"], work, { HOME: home, PATH: pathWithoutSandbox(root) }).done;
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/no OS sandbox here \(bwrap and socat not found on PATH\): work runs without one \(sandbox: auto\)/);
    const info = JSON.parse(readFileSync(join(runDir(work), "run.json"), "utf8"));
    expect(info.sandbox).toMatchObject({ available: false, reason: "bwrap and socat not found on PATH", phases: { work: "unavailable" } });
  }, 60_000);
});

describe.skipIf(skipped(!probe.available, `no OS sandbox here: ${probe.available ? "" : probe.reason}`))("without socat, the fence runs for phases that may reach no host", () => {
  /** A PATH with bubblewrap and what the phases use, but no socat; and a fake `claude`. */
  function pathWithoutSocat(root: string): string {
    const bin = join(root, "bin");
    mkdirSync(bin);
    for (const [name, target] of [["node", process.execPath], ["sh", "/bin/sh"], ["git", "/usr/bin/git"], ["cat", "/bin/cat"], ["true", "/bin/true"], ["bwrap", "/usr/bin/bwrap"]] as const) if (existsSync(target)) symlinkSync(target, join(bin, name));
    writeFileSync(join(bin, "claude"), "#!/bin/sh\necho done\n", { mode: 0o755 });
    return bin;
  }

  it("a phase that may reach no host is fenced: it writes its scope and nothing outside it", async () => {
    const { root, work, home } = world();
    const outside = join(root, "outside.txt");
    write(work, { "p.yaml": escapePipeline(`echo ok > src/ok.txt; echo evil > ${outside}; true`) });
    const r = await cliAsync(["run", "p.yaml", "--reporter", "plain"], work, { HOME: home, PATH: pathWithoutSocat(root) }).done;
    expect(r.stderr).not.toMatch(/SANDBOX_UNAVAILABLE/);
    expect(readFileSync(join(work, "src", "ok.txt"), "utf8")).toBe("ok\n");
    expect(existsSync(outside)).toBe(false);
    expect(events(work).find((e) => e.type === "phase.started")).toMatchObject({ sandbox: true });
    const info = JSON.parse(readFileSync(join(runDir(work), "run.json"), "utf8"));
    expect(info.sandbox).toMatchObject({ available: true, no_proxy: { reason: expect.stringMatching(/socat/) }, phases: { work: "on" } });
  }, 60_000);

  it("sandbox: required on a phase that may reach hosts is exit 2 at the setting, naming socat, and no run folder", async () => {
    const { root, work, home } = world();
    write(work, { "p.yaml": escapePipeline("echo hi", `, network: ["127.0.0.1:${port}"]`) });
    const r = await cliAsync(["run", "p.yaml", "--reporter", "plain"], work, { HOME: home, PATH: pathWithoutSocat(root) }).done;
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/p\.yaml:3:10: error SANDBOX_UNAVAILABLE sandbox: required, but phase "work" may reach hosts, and the proxy to them cannot run here: socat, which runs the proxy to a phase's allowed hosts, is not found on PATH/);
    expect(r.stderr).toMatch(/hint: install it: apt-get install socat/);
    expect(existsSync(join(work, ".phaseloop", "runs"))).toBe(false);
  }, 60_000);

  it("sandbox: auto runs a phase that may reach hosts without the sandbox, and says so at the start and in run.json", async () => {
    const { root, work, home } = world();
    write(work, { "p.yaml": escapePipeline("echo hi > src/hi.txt", `, network: ["127.0.0.1:${port}"]`).replace("sandbox: required", "sandbox: auto") });
    const r = await cliAsync(["run", "p.yaml", "--reporter", "plain"], work, { HOME: home, PATH: pathWithoutSocat(root) }).done;
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/no proxy to allowed hosts here \(socat, which runs the proxy to a phase's allowed hosts, is not found on PATH\): work, which may reach hosts, runs without one \(sandbox: auto\)/);
    expect(events(work).find((e) => e.type === "phase.started")).toMatchObject({ sandbox: false });
    expect(JSON.parse(readFileSync(join(runDir(work), "run.json"), "utf8")).sandbox).toMatchObject({ available: true, phases: { work: "unavailable" } });
  }, 60_000);

  it("an agent CLI known only from the command it runs is found out when the phase starts: auto says so, required fails the phase", async () => {
    const { root, work, home } = world();
    const PATH = pathWithoutSocat(root);
    const pipeline = (mode: string): string => escapePipeline("unused").replace("sandbox: required", `sandbox: ${mode}`).replace(/command: \[sh, -c, [^\]]*\]/, 'command: ["{{ params.cli }}", "-p"]').replace("name: escape\n", 'name: escape\nparams:\n  cli: { type: string, default: claude }\n');
    write(work, { "p.yaml": pipeline("auto") });
    const auto = await cliAsync(["run", "p.yaml", "--reporter", "plain"], work, { HOME: home, PATH }).done;
    expect(auto.code, auto.stdout + auto.stderr).toBe(0);
    expect(auto.stdout).toMatch(/phase "work" may reach api\.anthropic\.com, and the proxy to them cannot run here: socat[^\n]*: it runs without an OS sandbox \(sandbox: auto\)/);
    expect(events(work).find((e) => e.type === "phase.started")).toMatchObject({ sandbox: false });

    // a workdir of its own: two runs in one second need not list in the order they ran
    const other = world();
    write(other.work, { "p.yaml": pipeline("required") });
    const required = await cliAsync(["run", "p.yaml", "--reporter", "plain"], other.work, { HOME: other.home, PATH }).done;
    expect(required.stderr).not.toMatch(/SANDBOX_UNAVAILABLE/);
    // the phase never started, fenced or not: it failed as a start failure (the pipeline's own rules then end the run)
    expect(events(other.work).some((e) => e.type === "phase.started")).toBe(false);
    const finished = events(other.work).filter((e) => e.type === "phase.finished").pop();
    expect(finished).toMatchObject({ error: "spawn_error", message: expect.stringMatching(/phase "work" may reach api\.anthropic\.com, and the proxy to them cannot run here: socat/) });
  }, 60_000);
});
