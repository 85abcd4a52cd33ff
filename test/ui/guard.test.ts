import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { allowedHosts, judgeRequest, withoutToken, type RequestFacts } from "../../src/ui/guard.ts";
import { isPhaseDirName, parseRunKey } from "../../src/ui/run-key.ts";

const config = { token: "s3cret-token", hosts: allowedHosts("127.0.0.1", 4321), cookieName: "phaseloop_ui_4321" };
const get = (over: Partial<RequestFacts> = {}): RequestFacts => ({ method: "GET", url: "/", host: "127.0.0.1:4321", origin: undefined, cookie: undefined, authorization: undefined, contentType: undefined, ...over });

describe("who may use the page", () => {
  it("serves nothing without the token", () => {
    expect(judgeRequest(config, get())).toMatchObject({ ok: false, status: 401 });
    expect(judgeRequest(config, get({ url: "/?token=wrong" }))).toMatchObject({ ok: false, status: 401 });
    expect(judgeRequest(config, get({ cookie: "phaseloop_ui_9999=s3cret-token" }))).toMatchObject({ ok: false, status: 401 });
  });

  it("takes the token from the address once (to set the cookie), then from the cookie or a bearer header", () => {
    expect(judgeRequest(config, get({ url: "/?token=s3cret-token" }))).toEqual({ ok: true, fromQuery: true });
    expect(judgeRequest(config, get({ cookie: "a=b; phaseloop_ui_4321=s3cret-token" }))).toEqual({ ok: true, fromQuery: false });
    expect(judgeRequest(config, get({ authorization: "Bearer s3cret-token" }))).toEqual({ ok: true, fromQuery: false });
    expect(withoutToken("/run/x?token=abc&y=1")).toBe("/run/x?y=1");
    expect(withoutToken("/?token=abc")).toBe("/");
  });

  it("refuses a Host that is not the address it serves, token or not (DNS rebinding)", () => {
    for (const host of ["evil.example:4321", "127.0.0.1:80", "127.0.0.1", "localhost.evil:4321", "0.0.0.0:4321", undefined]) {
      expect(judgeRequest(config, get({ host, url: "/?token=s3cret-token" }))).toMatchObject({ ok: false, status: 421 });
    }
    expect(judgeRequest(config, get({ host: "localhost:4321", cookie: "phaseloop_ui_4321=s3cret-token" })).ok).toBe(true);
  });

  it("listening on every interface, answers to the machine's own addresses only", () => {
    const any = allowedHosts("0.0.0.0", 8080, ["127.0.0.1", "192.168.1.20", "fe80::1"]);
    expect([...any].sort()).toEqual(["0.0.0.0:8080", "127.0.0.1:8080", "192.168.1.20:8080", "[fe80::1]:8080", "localhost:8080"]);
    expect(allowedHosts("::1", 9)).toEqual(new Set(["[::1]:9", "localhost:9", "127.0.0.1:9"]));
  });

  it("lets a request change a run only from the page's own origin, as JSON", () => {
    const post = (over: Partial<RequestFacts>) => judgeRequest(config, get({ method: "POST", url: "/api/stop", cookie: "phaseloop_ui_4321=s3cret-token", contentType: "application/json", origin: "http://127.0.0.1:4321", ...over }));
    expect(post({}).ok).toBe(true);
    expect(post({ origin: undefined })).toMatchObject({ ok: false, status: 403 });
    expect(post({ origin: "http://evil.example" })).toMatchObject({ ok: false, status: 403 });
    expect(post({ origin: "null" })).toMatchObject({ ok: false, status: 403 });
    expect(post({ contentType: "application/x-www-form-urlencoded" })).toMatchObject({ ok: false, status: 403 });
    expect(post({ cookie: undefined })).toMatchObject({ ok: false, status: 401 });
  });

  it("accepts no other token and no other host, whatever they are", () => {
    fc.assert(
      fc.property(fc.string(), fc.string(), (token, host) => {
        fc.pre(token !== config.token && !config.hosts.has(host.toLowerCase()));
        expect(judgeRequest(config, get({ url: `/?token=${encodeURIComponent(token)}`, cookie: `phaseloop_ui_4321=${token}` })).ok).toBe(false);
        expect(judgeRequest(config, get({ host, cookie: "phaseloop_ui_4321=s3cret-token" })).ok).toBe(false);
      }),
    );
  });
});

describe("run keys from the address bar", () => {
  it("name a run, its lanes and sub-pipeline runs, and nothing outside", () => {
    expect(parseRunKey("20261127-000850-uege")).toEqual(["20261127-000850-uege"]);
    expect(parseRunKey("r1/sub/0003-child/lanes/t-1")).toEqual(["r1", "sub", "0003-child", "lanes", "t-1"]);
    for (const bad of ["", "..", "r1/../x", "r1/sub/..", "r1/phases/x", "r1/sub", "/etc", "r1//x", ".hidden", "r1/sub/a..b"]) expect(parseRunKey(bad), bad).toBeUndefined();
    expect(isPhaseDirName("0001-work")).toBe(true);
    for (const bad of ["../x", "0001-../x", "work", "0001-a/b"]) expect(isPhaseDirName(bad), bad).toBe(false);
  });
});
