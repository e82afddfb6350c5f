import { assert, describe, it } from "@effect/vitest"
import { redactUrlUserinfo } from "../../src/Schemas/UrlRedaction.ts"

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
