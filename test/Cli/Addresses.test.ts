import { assert, describe, it } from "@effect/vitest"
import { Result } from "effect"
import { deriveAdvertiseAddr, parseListenAddr, parseSandboxdUrl } from "../../src/Cli/Addresses.ts"

const strict = { allowPortZero: false }

describe("parseListenAddr (CFG-14)", () => {
  it("accepts host:port with a port in 1..65535", () => {
    const cases: ReadonlyArray<[string, string, number]> = [
      [":10260", "", 10260],
      ["127.0.0.1:1", "127.0.0.1", 1],
      ["0.0.0.0:65535", "0.0.0.0", 65535],
      ["localhost:8080", "localhost", 8080],
      ["[::1]:10260", "::1", 10260],
      ["[::]:443", "::", 443],
      [":010260", "", 10260]
    ]
    for (const [text, host, port] of cases) {
      const result = parseListenAddr(text, strict)
      assert.deepStrictEqual(result, Result.succeed({ host, port }), text)
    }
  })

  it("rejects :0, named ports, a missing port and malformed hosts", () => {
    const cases: ReadonlyArray<[string, string]> = [
      [":0", "out of range"],
      ["127.0.0.1:0", "out of range"],
      [":65536", "out of range"],
      [":http", "not a number"],
      [":-1", "not a number"],
      [":+80", "not a number"],
      [": 80", "not a number"],
      [":1e3", "not a number"],
      ["127.0.0.1", "missing port"],
      ["", "missing port"],
      ["127.0.0.1:", "missing port"],
      ["::1:80", "too many colons"],
      ["[::1]", "missing port"],
      ["[::1]80", "missing port"],
      ["[::1]:80:90", "too many colons"],
      ["[::1:80", "missing ']'"],
      ["a[b:80", "unexpected '['"],
      ["a]b:80", "unexpected ']'"]
    ]
    for (const [text, problem] of cases) {
      const result = parseListenAddr(text, strict)
      assert.isTrue(Result.isFailure(result), `"${text}" should be rejected`)
      if (Result.isFailure(result)) assert.include(result.failure, problem, text)
    }
  })

  it("allows port 0 only when asked (the metrics address)", () => {
    assert.deepStrictEqual(parseListenAddr("127.0.0.1:0", { allowPortZero: true }), Result.succeed({ host: "127.0.0.1", port: 0 }))
    assert.isTrue(Result.isFailure(parseListenAddr(":http", { allowPortZero: true })))
    assert.isTrue(Result.isFailure(parseListenAddr(":65536", { allowPortZero: true })))
  })
})

describe("parseSandboxdUrl", () => {
  it("accepts http(s) URLs and trims trailing slashes", () => {
    assert.deepStrictEqual(parseSandboxdUrl("http://127.0.0.1:7777"), Result.succeed("http://127.0.0.1:7777"))
    assert.deepStrictEqual(parseSandboxdUrl("http://127.0.0.1:7777/"), Result.succeed("http://127.0.0.1:7777"))
    assert.deepStrictEqual(parseSandboxdUrl("https://sb.example//"), Result.succeed("https://sb.example"))
    assert.deepStrictEqual(parseSandboxdUrl("http://[::1]:7777/base/"), Result.succeed("http://[::1]:7777/base"))
  })

  it("rejects anything that is not an http(s) base URL", () => {
    for (const text of ["", "127.0.0.1:7777", "localhost:7777", "ftp://x", "unix:///run/sb.sock", "http://", "http://x:99999", "http://x/?a=1", "http://x/#f", "not a url"]) {
      assert.isTrue(Result.isFailure(parseSandboxdUrl(text)), `"${text}" should be rejected`)
    }
  })
})

describe("deriveAdvertiseAddr (CFG-9)", () => {
  it("prefers the explicit value", () => {
    assert.strictEqual(deriveAdvertiseAddr("10.0.0.5:7777", "http://127.0.0.1:7777"), "10.0.0.5:7777")
  })

  it("takes the URL's host part as written, port included when there is one", () => {
    assert.strictEqual(deriveAdvertiseAddr("", "http://127.0.0.1:7777"), "127.0.0.1:7777")
    assert.strictEqual(deriveAdvertiseAddr("", "https://sb.example"), "sb.example")
    assert.strictEqual(deriveAdvertiseAddr("", "http://sb.example:80/base"), "sb.example:80")
    assert.strictEqual(deriveAdvertiseAddr("", "http://[::1]:7777"), "[::1]:7777")
    assert.strictEqual(deriveAdvertiseAddr("", "http://user:pw@sb.example:7777"), "sb.example:7777")
  })

  it("falls back to the raw text without trailing slashes", () => {
    assert.strictEqual(deriveAdvertiseAddr("", "127.0.0.1:7777/"), "127.0.0.1:7777")
    assert.strictEqual(deriveAdvertiseAddr("", "localhost:7777"), "localhost:7777")
  })
})
