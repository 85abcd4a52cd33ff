/**
 * Escape attempts against the real OS sandbox (bubblewrap here): writes outside the profile,
 * reads of planted secrets, a loopback server not on the list, a daemon left behind. Runs as
 * whoever runs the tests; CI runs it as root and as an ordinary user.
 */
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runProcess } from "../../src/host/run-process.ts";
import { probeSandbox } from "../../src/host/probe-sandbox.ts";
import { closeSandboxSession, releaseSandboxed, sandboxRefusals, wrapInSandbox } from "../../src/host/sandbox-session.ts";
import { compileSandbox } from "../../src/sandbox/compile-sandbox.ts";
import { skipped } from "../skip-reason.ts";

const probe = probeSandbox();
const root = mkdtempSync(join(tmpdir(), "pl-escape-"));
const home = join(root, "home");
const work = join(root, "repo");
const sibling = join(root, "sibling");
const temp = join(root, "tmp");
let server: Server;
let port = 0;
let connections = 0;

async function inSandbox(script: string, write: string[] = ["src/**"], network: string[] = []) {
  const profile = compileSandbox({ workdir: work, home, tempDir: temp, write, agent: "command", network });
  const wrapped = await wrapInSandbox(profile, ["sh", "-c", script], work);
  const result = await runProcess({ command: wrapped.argv, cwd: work, env: { ...process.env, HOME: home, ...wrapped.env }, timeoutMs: 60_000 });
  const refusals = sandboxRefusals(profile, wrapped, result.stderrTail, work);
  releaseSandboxed(wrapped);
  return { result, refusals };
}

describe.skipIf(skipped(!probe.available, `no OS sandbox here: ${probe.available ? "" : probe.reason}`))("the sandbox holds", () => {
  beforeAll(async () => {
    for (const dir of [join(home, ".ssh"), join(home, ".aws"), join(work, "src"), sibling, temp]) mkdirSync(dir, { recursive: true });
    writeFileSync(join(home, ".bashrc"), "original\n");
    writeFileSync(join(home, ".ssh", "id_ed25519"), "PLANTED-SSH-KEY\n");
    writeFileSync(join(home, ".aws", "credentials"), "PLANTED-AWS-KEY\n");
    writeFileSync(join(sibling, "file"), "sibling\n");
    execFileSync("git", ["init", "-q", work]);
    writeFileSync(join(work, "README.md"), "readme\n");
    symlinkSync(join(home, ".bashrc"), join(work, "src", "rc-link"));
    symlinkSync(sibling, join(work, "src", "sibling-link"));
    server = createServer((socket) => {
      connections++;
      socket.end("SECRET-SERVICE\n");
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    port = (server.address() as { port: number }).port;
  });
  afterAll(async () => {
    server?.close();
    await closeSandboxSession();
    rmSync(root, { recursive: true, force: true });
  });

  it("lets the phase write inside its write scope", async () => {
    const { result } = await inSandbox(`echo ok > src/new.txt`);
    expect(result.exitCode).toBe(0);
    expect(readFileSync(join(work, "src", "new.txt"), "utf8")).toBe("ok\n");
  });

  it("refuses writes to dotfiles, /tmp, .., .git/hooks, outside the write scope and through symlinks, and names them", async () => {
    const marker = `pl-escape-${process.pid}`;
    const script = [
      `echo evil >> "$HOME/.bashrc"`,
      `mkdir -p "$HOME/.ssh" && echo evil >> "$HOME/.ssh/authorized_keys"`,
      `echo evil > /tmp/${marker}`,
      `echo evil > ../sibling/file`,
      `echo evil > .git/hooks/pre-commit`,
      `echo evil >> README.md`,
      `echo evil >> src/rc-link`,
      `echo evil > src/sibling-link/file`,
      `true`,
    ].join("; ");
    const { refusals } = await inSandbox(script);
    expect(readFileSync(join(home, ".bashrc"), "utf8")).toBe("original\n");
    expect(existsSync(join(home, ".ssh", "authorized_keys"))).toBe(false);
    expect(existsSync(join("/tmp", marker))).toBe(false);
    expect(readFileSync(join(sibling, "file"), "utf8")).toBe("sibling\n");
    expect(existsSync(join(work, ".git", "hooks", "pre-commit"))).toBe(false);
    expect(readFileSync(join(work, "README.md"), "utf8")).toBe("readme\n");
    expect(refusals.join("\n")).toContain(".bashrc");
    // /tmp is the phase's own: the write lands there, not in the host's /tmp (checked above)
    expect(refusals.join("\n")).not.toContain(`/tmp/${marker}`);
    expect(refusals.join("\n")).toContain("pre-commit");
  });

  it("hides the home directory's secrets", async () => {
    const { result, refusals } = await inSandbox(`cat "$HOME/.ssh/id_ed25519"; cat "$HOME/.aws/credentials"; ls "$HOME/.ssh"; true`);
    expect(result.stdout).not.toContain("PLANTED");
    expect(refusals.join("\n")).toContain(join(home, ".aws"));
  });

  // a phase that may reach some host goes through the proxy; one that may reach none has no proxy at all
  const modes = [["with a proxy", ["127.0.0.1:9"]], ["without a proxy", []]] as const;

  it.each(modes)("reaches no loopback server that is not on the list, directly or through the proxy (%s)", async (_, network) => {
    const connect = `const net=require("net");const s=net.connect(${port},"127.0.0.1");s.on("data",d=>process.stdout.write(d));s.on("error",e=>console.error("direct: "+e.message));`;
    const viaProxy = `const http=require("http");const u=new URL(process.env.HTTP_PROXY);const r=http.request({host:"127.0.0.1",port:u.port,method:"CONNECT",path:"127.0.0.1:${port}",headers:{"proxy-authorization":"Basic "+Buffer.from(decodeURIComponent(u.username)+":"+u.password).toString("base64")}});r.on("connect",(res,s)=>{console.error("proxy answered "+res.statusCode);s.on("data",d=>process.stdout.write(d))});r.on("response",res=>console.error("proxy refused: "+res.statusCode+" 127.0.0.1"));r.on("error",e=>console.error("proxy: "+e.message));r.end();`;
    const { result, refusals } = await inSandbox(`node -e '${connect}'; test -z "$HTTP_PROXY" || node -e '${viaProxy}'; true`, ["src/**"], [...network]);
    if (network.length > 0) expect(result.stderrTail, result.stderrTail).toMatch(/proxy (?:answered|refused:) 403/);
    else expect(result.stderrTail).not.toContain("proxy");
    expect(refusals.join("\n")).toContain(`127.0.0.1:${port}`);
    expect(result.stdout).not.toContain("SECRET-SERVICE");
    expect(connections).toBe(0);
  });

  it("keeps protected names unwritable inside a writable workdir: existing ones refused, new ones reported", async () => {
    writeFileSync(join(work, ".gitmodules"), "modules\n");
    mkdirSync(join(work, "src", "vendored", ".git", "hooks"), { recursive: true });
    writeFileSync(join(work, "src", "vendored", ".git", "config"), "[core]\n");
    const script = [
      `echo evil >> .gitmodules`,
      `echo evil > src/vendored/.git/hooks/post-checkout`,
      `echo evil >> src/vendored/.git/config`,
      `echo evil > .mcp.json`,
      `true`,
    ].join("; ");
    const { refusals } = await inSandbox(script, ["**"]);
    expect(readFileSync(join(work, ".gitmodules"), "utf8")).toBe("modules\n");
    expect(existsSync(join(work, "src", "vendored", ".git", "hooks", "post-checkout"))).toBe(false);
    expect(readFileSync(join(work, "src", "vendored", ".git", "config"), "utf8")).toBe("[core]\n");
    const said = refusals.join("\n");
    expect(said).toContain(".gitmodules");
    expect(said).toContain("post-checkout");
    // a name that did not exist cannot be fenced without a mount point in the user's tree: made, it is a refusal
    expect(said).toContain(`write ${join(work, ".mcp.json")}`);
    // and undone before phaseloop goes on
    expect(existsSync(join(work, ".mcp.json"))).toBe(false);
    rmSync(join(work, ".gitmodules"), { force: true });
    rmSync(join(work, "src", "vendored"), { recursive: true, force: true });
  });

  it("a .git made in a workdir that is not a repository is a refusal, removed before phaseloop runs git there", async () => {
    const plain = join(root, "plain");
    mkdirSync(join(plain, "src"), { recursive: true });
    const profile = compileSandbox({ workdir: plain, home, tempDir: temp, write: ["**"], agent: "command" });
    const wrapped = await wrapInSandbox(profile, ["sh", "-c", "git init -q . && git config filter.x.clean 'touch /tmp/pl-filter-ran' && echo '* filter=x' > .gitattributes"], plain);
    const result = await runProcess({ command: wrapped.argv, cwd: plain, env: { ...process.env, HOME: home, ...wrapped.env }, timeoutMs: 60_000 });
    const refusals = sandboxRefusals(profile, wrapped, result.stderrTail, plain);
    releaseSandboxed(wrapped);
    expect(refusals).toContain(`write ${join(plain, ".git")}`);
    expect(existsSync(join(plain, ".git"))).toBe(false);
  });

  it.each(modes)("refuses Unix sockets: a service listening on one outside is out of reach (%s)", async (_, network) => {
    const path = join(root, "service.sock");
    let reached = 0;
    const unix = createServer((socket) => {
      reached++;
      socket.end("SECRET-SOCKET\n");
    });
    await new Promise<void>((resolve) => unix.listen(path, resolve));
    try {
      const connect = `const s=require("net").connect(${JSON.stringify(path)});s.on("data",d=>process.stdout.write(d));s.on("error",e=>console.error("unix: "+e.message));`;
      const { result } = await inSandbox(`node -e '${connect}'; true`, ["src/**"], [...network]);
      expect(result.stderrTail).toMatch(/unix: .*(EPERM|EACCES|not permitted)/);
      expect(result.stdout).not.toContain("SECRET-SOCKET");
      expect(reached).toBe(0);
    } finally {
      unix.close();
    }
  });

  it.each(modes)("refuses io_uring (sockets without the socket call) and a user namespace of its own; socketpair and child processes work (%s)", async (_, network) => {
    const py = [
      "import ctypes, os, socket",
      "libc = ctypes.CDLL(None, use_errno=True)",
      "r = libc.syscall(425, 8, ctypes.create_string_buffer(120))",
      "print('uring', r, os.strerror(ctypes.get_errno()) if r < 0 else 'open')",
      "a, b = socket.socketpair(); a.send(b'x'); print('pair', b.recv(1))",
      "print('unshare', os.system('unshare -U true 2>/dev/null'))",
    ].join("\n");
    const { result } = await inSandbox(`python3 -c "${py}"; node -e 'console.log("child", require("child_process").execFileSync("echo", ["ok"]).toString().trim())'`, ["src/**"], [...network]);
    expect(result.stdout).toMatch(/uring -1 Operation not permitted/);
    expect(result.stdout).toContain("pair b'x'");
    expect(result.stdout).not.toContain("unshare 0");
    expect(result.stdout).toContain("child ok");
  });

  it("the relay to the proxy, which keeps its Unix sockets, cannot be taken over by the phase: not traced, its memory and environment closed", async () => {
    const script = [
      `for p in /proc/[0-9]*; do [ "$p" = /proc/$$ ] && continue; tr '\\0' ' ' < $p/cmdline 2>/dev/null | grep -q '^/usr/bin/perl' && relay=\${p#/proc/}; done`,
      `echo "relay=$relay"`,
      `head -c 1 /proc/$relay/environ >/dev/null 2>&1 && echo environ-open`,
      `head -c 1 /proc/$relay/mem >/dev/null 2>&1 && echo mem-open`,
      `python3 -c "import ctypes,sys; l=ctypes.CDLL(None,use_errno=True); r=l.ptrace(16, int(sys.argv[1]), 0, 0); print('attached' if r == 0 else 'no-trace')" $relay`,
    ].join("; ");
    const { result } = await inSandbox(script, ["src/**"], ["127.0.0.1:9"]);
    expect(result.stdout).toMatch(/relay=\d+/);
    expect(result.stdout).not.toContain("environ-open");
    expect(result.stdout).not.toContain("mem-open");
    expect(result.stdout).toContain("no-trace");
  });

  it("leaves nothing in the workdir after the phase: no mount points of protected names", async () => {
    const before = readdirSync(work).sort();
    await inSandbox(`true`, ["**"]);
    expect(readdirSync(work).sort()).toEqual(before);
  });

  it("does not make a write directory writable when it is a symlink out of the workdir", async () => {
    symlinkSync(sibling, join(work, "out"));
    try {
      const { refusals } = await inSandbox(`echo evil > out/file; echo evil > out/new; true`, ["out/**"]);
      expect(readFileSync(join(sibling, "file"), "utf8")).toBe("sibling\n");
      expect(existsSync(join(sibling, "new"))).toBe(false);
      expect(refusals.join("\n")).toContain("out/file");
    } finally {
      rmSync(join(work, "out"));
    }
  });

  it("leaves no daemon behind when the phase ends", async () => {
    const tag = `${Date.now() % 100000}${process.pid}`;
    await inSandbox(`(setsid sh -c 'sleep ${tag}' >/dev/null 2>&1 &); (sh -c '(sleep ${tag} &) &' ); nohup sleep ${tag} >/dev/null 2>&1 & true`);
    // the kernel ends what is left in the PID namespace as it goes; a busy machine may still list a dying one for a moment
    const living = () => readdirSync("/proc").filter((pid) => {
      try {
        return /^\d+$/.test(pid) && readFileSync(`/proc/${pid}/cmdline`, "utf8").includes(`sleep\0${tag}`);
      } catch {
        return false;
      }
    });
    let alive = living();
    for (let i = 0; i < 40 && alive.length > 0; i++) {
      await new Promise((r) => setTimeout(r, 50));
      alive = living();
    }
    expect(alive).toEqual([]);
  });
});

describe.skipIf(skipped(probe.available, "the OS sandbox is here: what happens without one is not tested"))("without a sandbox", () => {
  it("the probe says why and what to do", () => {
    if (!probe.available) expect(probe.fix.length).toBeGreaterThan(0);
    // CI installs bubblewrap: there, no sandbox is a failure, not a skip.
    expect(process.env.CI, probe.available ? "" : probe.reason).not.toBe("true");
  });
});
