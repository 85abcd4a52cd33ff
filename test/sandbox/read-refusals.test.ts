import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { compileSandbox } from "../../src/sandbox/compile-sandbox.ts";
import { readRefusals } from "../../src/sandbox/read-refusals.ts";

const profile = compileSandbox({ workdir: "/w/repo", home: "/home/u", tempDir: "/tmp/pl-1", write: ["src/**"], agent: "claude", network: ["registry.npmjs.org"] });
const read = (stderr: string) => readRefusals(stderr, "/w/repo", profile);

describe("readRefusals", () => {
  it("names the path a write met a read-only file system at, as the shell, coreutils, node, python and git say it", () => {
    expect(read("sh: 1: cannot create /home/u/.bashrc: Read-only file system")).toEqual(["write /home/u/.bashrc"]);
    expect(read("sh: 1: cannot create README.md: Read-only file system")).toEqual(["write /w/repo/README.md"]);
    expect(read("touch: cannot touch '/tmp/x': Read-only file system")).toEqual(["write /tmp/x"]);
    expect(read("mkdir: cannot create directory ‘../sibling/d’: Read-only file system")).toEqual(["write /w/sibling/d"]);
    expect(read("Error: EROFS: read-only file system, open '/home/u/.ssh/authorized_keys'")).toEqual(["write /home/u/.ssh/authorized_keys"]);
    // node's uncaught error: the message line names the path, the `code:` line nothing more
    expect(read("Error: EROFS: read-only file system, open '/home/u/.bashrc'\n    at Object.writeFileSync (node:fs:2380:20) {\n  errno: -30,\n  code: 'EROFS',\n  syscall: 'open',\n  path: '/home/u/.bashrc'\n}")).toEqual(["write /home/u/.bashrc"]);
    // codex words a patch it could not write without the OS's error: named only where the profile does not let it write
    expect(read("Failed to write file /w/repo/NOTES.md")).toEqual(["write /w/repo/NOTES.md"]);
    expect(read("Failed to write file /w/repo/src/ok.ts")).toEqual([]);
    expect(read("OSError: [Errno 30] Read-only file system: '/etc/passwd'")).toEqual(["write /etc/passwd"]);
    expect(read("error: could not lock config file .git/config: Read-only file system")).toEqual(["write /w/repo/.git/config"]);
    expect(read("bash: line 1: src/../.git/hooks/pre-commit: Read-only file system")).toEqual(["write /w/repo/.git/hooks/pre-commit"]);
  });

  it("names a hidden secret that was read, and a host the proxy refused", () => {
    expect(read("cat: /home/u/.ssh/id_ed25519: No such file or directory")).toEqual(["read /home/u/.ssh"]);
    expect(read("curl: (56) CONNECT tunnel failed, response 403 Forbidden for evil.example.com:443")).toEqual(["connect evil.example.com:443"]);
    expect(read("403 Forbidden registry.npmjs.org")).toEqual([]);
    expect(read("connect: connect ECONNREFUSED 127.0.0.1:4321")).toEqual(["connect 127.0.0.1:4321"]);
    expect(read("curl: (7) Failed to connect to 10.1.2.3 port 8080 after 0 ms: Couldn't connect to server")).toEqual(["connect 10.1.2.3:8080"]);
    expect(read("TypeError: fetch failed: Proxy response (403) !== 200 when HTTP Tunneling evil.example.com:443")).toEqual(["connect evil.example.com:443"]);
    expect(read("HTTP/1.1 403 Forbidden: Connection blocked by network allowlist evil.example.com")).toEqual(["connect evil.example.com"]);
  });

  it("names a host that could not be looked up (a phase that may reach no host has no name server), unless it is allowed", () => {
    expect(read("curl: (6) Could not resolve host: evil.example.com")).toEqual(["connect evil.example.com"]);
    expect(read("fatal: unable to access 'https://github.com/a/b.git/': Could not resolve host: github.com")).toEqual(["connect github.com"]);
    expect(read("Error: getaddrinfo EAI_AGAIN api.evil.io")).toEqual(["connect api.evil.io"]);
    expect(read("ssh: Could not resolve hostname git.example.org: Temporary failure in name resolution")).toEqual(["connect git.example.org"]);
    expect(read("NameResolutionError: Failed to resolve 'pypi.org' ([Errno -3] Temporary failure in name resolution)")).toEqual(["connect pypi.org"]);
    expect(read("wget: unable to resolve host address ‘evil.example.com’")).toEqual(["connect evil.example.com"]);
    expect(read("curl: (6) Could not resolve host: registry.npmjs.org")).toEqual([]);
  });

  it("does not take a 403 inside an id, or a file's name, for a proxy's refusal", () => {
    // an agent's event carries ids and counts with these digits, and names the files it read
    expect(read('{"id":"msg_01X403aBc","type":"text","text":"I read notes.md and wrote out.txt"}')).toEqual([]);
    expect(read("toolu_9c403f: Read notes.md")).toEqual([]);
    expect(read("tokens 403 then notes.md")).toEqual([]);
    expect(read("Forbidden words in docs/notes.md and README.md")).toEqual([]);
    expect(read("connect ECONNREFUSED while reading config.json")).toEqual([]);
    expect(read("response 403 Forbidden for api.example.com:443")).toEqual(["connect api.example.com:443"]);
  });

  it("says nothing of ordinary errors", () => {
    expect(read("npm ERR! missing script: test\nError: Cannot find module 'x'\nsrc/a.ts:3:1 - error TS2304")).toEqual([]);
  });

  it("reads any text without throwing, and says only write, read or connect", () => {
    fc.assert(
      fc.property(fc.array(fc.oneof(fc.string(), fc.constantFrom("Read-only file system", "EROFS", "Permission denied", "403 Forbidden", "'/home/u/.aws/x'", "/home/u/.ssh", "cannot create ", "../", "\n", ":", "'")), { maxLength: 30 }), (parts) => {
        for (const r of read(parts.join(""))) expect(r).toMatch(/^(write|read|connect) /);
      }),
    );
  });
});
