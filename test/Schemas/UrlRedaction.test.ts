import { assert, describe, it } from "@effect/vitest"
import { redactCause, redactUrlUserinfo } from "../../src/Schemas/UrlRedaction.ts"

describe("redactUrlUserinfo", () => {
  it("replaces the user info of every URL in a text, keeping scheme, host, port and path", () => {
    const cases: ReadonlyArray<readonly [string, string]> = [
      ["http://user:pa55@127.0.0.1:7777", "http://redacted@127.0.0.1:7777"],
      ["https://tok3n@sandboxd.example/v1/x?q=1", "https://redacted@sandboxd.example/v1/x?q=1"],
      // an unescaped "@" inside the password: everything up to the authority's last "@"
      ["GET http://u:p@ss@h:1/p failed", "GET http://redacted@h:1/p failed"],
      ["two: http://a:b@h1 and https://c@h2/", "two: http://redacted@h1 and https://redacted@h2/"],
      ["quoted \"http://u:p@h\"", "quoted \"http://redacted@h\""],
      // nothing to redact: a URL without user info, an "@" in a path or elsewhere
      ["http://127.0.0.1:7777/v1/a@b", "http://127.0.0.1:7777/v1/a@b"],
      ["mail me@example.com", "mail me@example.com"],
      ["", ""]
    ]
    for (const [input, expected] of cases) assert.strictEqual(redactUrlUserinfo(input), expected, input)
  })
})

describe("redactCause", () => {
  it("copies an error (and its causes) with URL user info redacted, keeping name and code", () => {
    const inner = Object.assign(new Error("connect ECONNREFUSED for http://u:inner-pw@h:1/x"), { code: "ECONNREFUSED" })
    const outer = new TypeError("Request cannot be constructed from a URL that includes credentials: http://u:outer-pw@h:1/api", {
      cause: inner
    })
    const copy = redactCause(outer)
    assert.instanceOf(copy, Error)
    const error = copy as Error & { readonly code?: string }
    assert.strictEqual(error.name, "TypeError")
    assert.strictEqual(error.message, "Request cannot be constructed from a URL that includes credentials: http://redacted@h:1/api")
    const text = JSON.stringify({ message: error.message, stack: error.stack, cause: String((error.cause as Error).message) })
    assert.notInclude(text, "outer-pw")
    assert.notInclude(text, "inner-pw")
    assert.strictEqual((error.cause as Error & { code?: string }).code, "ECONNREFUSED")
    assert.strictEqual(redactCause("see http://a:b@h"), "see http://redacted@h")
    assert.strictEqual(redactCause(42), 42)
  })
})
