/**
 * Pure parts of the edge defences (contract section 9): client address resolution (C22), the undecodable
 * URL rewrite (C24), the same-origin rule (C23, and the header pairs of C33), the account-field and token-name rules
 * of every door (C31), the throttle key of an address, and the page policy.
 */
import { describe, expect, it, vi } from "vitest";
import { apiTokenNameField } from "../../lib/api-tokens/create-api-token";
import { accountFieldsProblem } from "../../lib/auth/credential-fields";
import { normalizeAddress, resolveClientAddress, UNKNOWN_ADDRESS } from "../../lib/http/client-address";
import { INVALID_URL_API_PATH, INVALID_URL_PAGE_PATH, invalidUrlRewrite } from "../../lib/http/client-address-hook";
import { isPlainLine } from "../../lib/http/plain-text";
import { isSameOrigin, isStateChangingMethod, originMatchesHost } from "../../lib/http/same-origin";
import { pageContentSecurityPolicy, pagePolicyMode } from "../../lib/http/security-headers";
import { addressKey } from "../../lib/limits/auth-throttles";

describe("resolveClientAddress (C22)", () => {
  it("is the socket's peer with TRUSTED_PROXY_HOPS=0, whatever X-Forwarded-For says", () => {
    for (const forwardedFor of [undefined, "203.0.113.9", "203.0.113.9, 198.51.100.1", ["1.1.1.1", "2.2.2.2"]]) {
      expect(resolveClientAddress({ peer: "127.0.0.2", forwardedFor, trustedHops: 0 })).toBe("127.0.0.2");
    }
  });

  it("takes the entry written by the outermost trusted proxy, never one the client wrote before it", () => {
    // Client forged "6.6.6.6"; the one proxy saw 203.0.113.9 and appended it; the peer is the proxy.
    const forwardedFor = "6.6.6.6, 203.0.113.9";
    expect(resolveClientAddress({ peer: "10.0.0.5", forwardedFor, trustedHops: 1 })).toBe("203.0.113.9");
    // Two proxies: the outer one appended the client's address, the inner one the outer proxy's.
    expect(
      resolveClientAddress({ peer: "10.0.0.5", forwardedFor: "6.6.6.6, 203.0.113.9, 10.0.0.4", trustedHops: 2 }),
    ).toBe("203.0.113.9");
    // Several header fields count as one list, in order.
    expect(resolveClientAddress({ peer: "10.0.0.5", forwardedFor: ["6.6.6.6", "203.0.113.9"], trustedHops: 1 })).toBe(
      "203.0.113.9",
    );
  });

  it("takes the leftmost entry of a chain shorter than the trusted hops, and skips entries that are not addresses", () => {
    expect(resolveClientAddress({ peer: "10.0.0.5", forwardedFor: "203.0.113.9", trustedHops: 3 })).toBe("203.0.113.9");
    expect(resolveClientAddress({ peer: "10.0.0.5", forwardedFor: "", trustedHops: 1 })).toBe("10.0.0.5");
    expect(resolveClientAddress({ peer: "10.0.0.5", forwardedFor: "garbage", trustedHops: 1 })).toBe("10.0.0.5");
    expect(resolveClientAddress({ peer: "10.0.0.5", forwardedFor: "unknown, 203.0.113.9", trustedHops: 2 })).toBe(
      "203.0.113.9",
    );
  });

  it("normalizes what sockets and proxies write", () => {
    expect(resolveClientAddress({ peer: "::ffff:127.0.0.2", forwardedFor: undefined, trustedHops: 0 })).toBe(
      "127.0.0.2",
    );
    expect(resolveClientAddress({ peer: undefined, forwardedFor: undefined, trustedHops: 0 })).toBe(UNKNOWN_ADDRESS);
    expect(normalizeAddress("[2001:DB8::1]:443")).toBe("2001:db8::1");
    expect(normalizeAddress("203.0.113.9:8080")).toBe("203.0.113.9");
    expect(normalizeAddress("not an address")).toBeNull();
  });
});

describe("addressKey", () => {
  it("keys IPv4 by the address and IPv6 by its /64, so rotating inside one subscriber's block changes nothing", () => {
    expect(addressKey("203.0.113.9")).toBe("203.0.113.9");
    expect(addressKey("2001:db8:1:2:aaaa::1")).toBe(addressKey("2001:db8:1:2:bbbb:cccc:dddd:eeee"));
    expect(addressKey("2001:db8:1:2::1")).toBe("2001:db8:1:2::/64");
    expect(addressKey("2001:db8:1:3::1")).not.toBe(addressKey("2001:db8:1:2::1"));
    expect(addressKey("::1")).toBe("0:0:0:0::/64");
  });
});

describe("invalidUrlRewrite (C24)", () => {
  it("sends undecodable API paths to the 400 problem route and page paths to the 400 page", () => {
    expect(invalidUrlRewrite("/api/v1/topups/%ZZ")).toBe(INVALID_URL_API_PATH);
    expect(invalidUrlRewrite("/admin/topups/%E0%A4%A/x")).toBe(INVALID_URL_PAGE_PATH);
    expect(invalidUrlRewrite("/api/v1/topups/%E0%A4%A")).toBe(INVALID_URL_API_PATH);
  });

  it("leaves decodable paths alone, whatever the query string holds", () => {
    expect(invalidUrlRewrite("/api/v1/topups/a%20b")).toBeNull();
    expect(invalidUrlRewrite("/wallet?x=%ZZ")).toBeNull();
    expect(invalidUrlRewrite("/")).toBeNull();
  });
});

describe("isSameOrigin (C23)", () => {
  const origins = ["http://127.0.0.1:3000"];
  const check = (headers: Record<string, string>) => isSameOrigin(new Headers(headers), origins);

  it("accepts the browser's same-origin signals", () => {
    expect(check({ "sec-fetch-site": "same-origin", origin: "http://127.0.0.1:3000" })).toBe(true);
    expect(check({ "sec-fetch-site": "same-origin" })).toBe(true);
    expect(check({ origin: "http://127.0.0.1:3000" })).toBe(true);
  });

  it("refuses another port of the same host (same-site), another site, null and no signal at all", () => {
    expect(check({ "sec-fetch-site": "same-site", origin: "http://127.0.0.1:3999" })).toBe(false);
    expect(check({ "sec-fetch-site": "cross-site", origin: "https://evil.example" })).toBe(false);
    expect(check({ origin: "http://127.0.0.1:3999" })).toBe(false);
    expect(check({ origin: "null" })).toBe(false);
    expect(check({})).toBe(false);
    // A browser that says same-site is believed over an Origin header that looks right.
    expect(check({ "sec-fetch-site": "same-site", origin: "http://127.0.0.1:3000" })).toBe(false);
  });

  it("C33: refuses Sec-Fetch-Site: same-origin beside a foreign Origin (a pair no browser sends)", () => {
    expect(check({ "sec-fetch-site": "same-origin", origin: "https://evil.example" })).toBe(false);
    expect(check({ "sec-fetch-site": "same-origin", origin: "http://127.0.0.1:3999" })).toBe(false);
    expect(check({ "sec-fetch-site": "same-origin", origin: "null" })).toBe(false);
  });

  it("C33: an Origin must name the host the request was sent to, as Next.js checks before a server action", () => {
    const matches = (headers: Record<string, string>) => originMatchesHost(new Headers(headers));
    expect(matches({ host: "127.0.0.1:3000" })).toBe(true);
    expect(matches({ origin: "http://127.0.0.1:3000", host: "127.0.0.1:3000" })).toBe(true);
    // One of the app's origins, but not the host this request went to: Next.js would answer 500.
    expect(matches({ origin: "http://localhost:3000", host: "127.0.0.1:3000" })).toBe(false);
    expect(matches({ origin: "https://evil.example", host: "127.0.0.1:3000" })).toBe(false);
    // A proxy's X-Forwarded-Host (its first value) is what Next.js compares when present.
    expect(
      matches({ origin: "https://wallet.example", host: "127.0.0.1:3000", "x-forwarded-host": " wallet.example, x" }),
    ).toBe(true);
    expect(matches({ origin: "http://127.0.0.1:3000", host: "127.0.0.1:3000", "x-forwarded-host": "evil" })).toBe(
      false,
    );
  });

  it("treats every method but GET, HEAD and OPTIONS as a state change", () => {
    for (const method of ["POST", "PUT", "PATCH", "DELETE", "PROPFIND"])
      expect(isStateChangingMethod(method)).toBe(true);
    for (const method of ["GET", "head", "OPTIONS"]) expect(isStateChangingMethod(method)).toBe(false);
  });
});

describe("accountFieldsProblem (one validation for every door)", () => {
  const valid = { email: "a@example.test", password: "long enough password", name: "Ann" };

  it("refuses the issue's 1,000,000-character name and 309-character email at sign-up", () => {
    expect(accountFieldsProblem("/sign-up/email", { ...valid, name: "n".repeat(1_000_000) })?.code).toBe(
      "INVALID_NAME",
    );
    const email = `${"a".repeat(297)}@example.com`;
    expect(email).toHaveLength(309);
    expect(accountFieldsProblem("/sign-up/email", { ...valid, email })?.code).toBe("INVALID_EMAIL");
    expect(accountFieldsProblem("/sign-up/email", { ...valid, password: "short" })?.code).toBe("INVALID_NEW_PASSWORD");
    expect(accountFieldsProblem("/sign-up/email", { ...valid, password: "p".repeat(129) })?.code).toBe(
      "INVALID_NEW_PASSWORD",
    );
    expect(accountFieldsProblem("/sign-up/email", valid)).toBeNull();
  });

  it("applies the same rules to the library's other account endpoints", () => {
    expect(accountFieldsProblem("/update-user", { name: "n".repeat(101) })?.code).toBe("INVALID_NAME");
    expect(accountFieldsProblem("/update-user", { name: "n".repeat(100) })).toBeNull();
    expect(accountFieldsProblem("/change-password", { currentPassword: "x", newPassword: "short" })?.code).toBe(
      "INVALID_NEW_PASSWORD",
    );
    expect(accountFieldsProblem("/change-email", { newEmail: `${"a".repeat(250)}@x.test` })?.code).toBe(
      "INVALID_EMAIL",
    );
    expect(accountFieldsProblem("/sign-in/email", { email: "x", password: "y" })).toBeNull();
  });

  it("C31: refuses a name or picture address holding \\u0000 (PostgreSQL refuses it in text) or another control character", () => {
    for (const name of ["a\u0000b", "a\nb", "tab\there", "esc\u001b[31m", "del\u007f", "c1\u0085"]) {
      expect(accountFieldsProblem("/sign-up/email", { ...valid, name })?.code, JSON.stringify(name)).toBe(
        "INVALID_NAME",
      );
      expect(accountFieldsProblem("/update-user", { name })?.code).toBe("INVALID_NAME");
    }
    expect(accountFieldsProblem("/sign-up/email", { ...valid, image: "https://x.example/a\u0000.png" })?.code).toBe(
      "INVALID_IMAGE",
    );
    expect(accountFieldsProblem("/update-user", { image: "\u0000" })?.code).toBe("INVALID_IMAGE");
    // Letters of any script, spaces and punctuation stay names.
    expect(accountFieldsProblem("/sign-up/email", { ...valid, name: "Zoë O'Brien-Łukasz 李" })).toBeNull();
    expect(accountFieldsProblem("/sign-up/email", { ...valid, image: "https://x.example/a.png" })).toBeNull();
  });
});

describe("C31: one-line names (isPlainLine, apiTokenNameField)", () => {
  it("C31: refuses every control character, \\u0000 first, and nothing else", () => {
    for (const code of [0x00, 0x09, 0x0a, 0x0d, 0x1b, 0x1f, 0x7f, 0x80, 0x9f]) {
      expect(isPlainLine(`a${String.fromCharCode(code)}b`), code.toString(16)).toBe(false);
    }
    for (const text of ["", "a b", "CI bot (prod)", "Zoë 李 ✓", "\u00a0\u200b", "\u{1F4B8}"]) {
      expect(isPlainLine(text), JSON.stringify(text)).toBe(true);
    }
  });

  it("C31: a token name is 1..100 characters after trimming, without control characters", () => {
    expect(apiTokenNameField.safeParse("a\u0000b").success).toBe(false);
    expect(apiTokenNameField.safeParse("ci\nbot").success).toBe(false);
    expect(apiTokenNameField.safeParse("   ").success).toBe(false);
    expect(apiTokenNameField.safeParse("n".repeat(101)).success).toBe(false);
    expect(apiTokenNameField.safeParse("  deploy bot  ")).toEqual({ success: true, data: "deploy bot" });
    expect(apiTokenNameField.safeParse("n".repeat(100)).success).toBe(true);
  });
});

describe("pageContentSecurityPolicy", () => {
  it("allows scripts by nonce with 'strict-dynamic', never 'unsafe-eval' or inline scripts, and forbids framing", () => {
    const policy = pageContentSecurityPolicy("abc123==");
    const directives = new Map(policy.split("; ").map((d) => [d.split(" ")[0], d.split(" ").slice(1)]));
    expect(directives.get("script-src")).toEqual(["'nonce-abc123=='", "'strict-dynamic'"]);
    expect(directives.get("frame-ancestors")).toEqual(["'none'"]);
    expect(directives.get("style-src")).toContain("'unsafe-inline'");
    expect(policy).not.toContain("unsafe-eval");
    expect(directives.get("object-src")).toEqual(["'none'"]);
  });

  it("in production is exactly the policy deployed builds send, also when no mode is given", () => {
    const production =
      "default-src 'self'; script-src 'nonce-abc123==' 'strict-dynamic'; style-src 'self' 'unsafe-inline'; " +
      "img-src 'self' data:; font-src 'self'; connect-src 'self'; object-src 'none'; base-uri 'none'; " +
      "form-action 'self'; frame-ancestors 'none'";
    expect(pageContentSecurityPolicy("abc123==")).toBe(production);
    expect(pageContentSecurityPolicy("abc123==", "production")).toBe(production);
  });

  it("in development adds only 'unsafe-eval' to script-src (decision 057); every other directive is production's", () => {
    const directivesOf = (policy: string) => new Map(policy.split("; ").map((d) => [d.split(" ")[0], d]));
    const production = directivesOf(pageContentSecurityPolicy("abc123==", "production"));
    const development = directivesOf(pageContentSecurityPolicy("abc123==", "development"));
    expect([...development.keys()]).toEqual([...production.keys()]);
    for (const [name, directive] of production) {
      if (name !== "script-src") expect(development.get(name), name).toBe(directive);
    }
    // Still nonce-bound: an inline script without the nonce, or one from another origin, stays blocked.
    expect(development.get("script-src")).toBe("script-src 'nonce-abc123==' 'strict-dynamic' 'unsafe-eval'");
    expect(development.get("script-src")).not.toContain("unsafe-inline");
  });

  it("is in development mode only when NODE_ENV is development (next dev), production for anything else", () => {
    try {
      for (const [value, mode] of [
        ["development", "development"],
        ["production", "production"],
        ["test", "production"],
        ["", "production"],
      ] as const) {
        vi.stubEnv("NODE_ENV", value);
        expect(pagePolicyMode(), JSON.stringify(value)).toBe(mode);
      }
    } finally {
      vi.unstubAllEnvs();
    }
  });
});
