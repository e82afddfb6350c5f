import { assert, describe, it } from "@effect/vitest"
import { EXCERPT_LIMIT, safeExcerpt, SCRUBBED, scrubText } from "../../src/Schemas/Scrub.ts"

describe("scrubText", () => {
  it("removes every known secret, longest first", () => {
    const out = scrubText("root s3cr3t-root and s3cr3t-root-claim twice s3cr3t-root", ["s3cr3t-root", "s3cr3t-root-claim"])
    assert.notInclude(out, "s3cr3t")
    assert.strictEqual(out, `root ${SCRUBBED} and ${SCRUBBED} twice ${SCRUBBED}`)
  })

  it("removes bearer values, token fields and token-shaped hex whatever the caller knows", () => {
    assert.strictEqual(scrubText("Authorization: Bearer abc123def"), `Authorization: Bearer ${SCRUBBED}`)
    assert.strictEqual(scrubText("authorization=xyz98765"), `authorization=${SCRUBBED}`)
    assert.strictEqual(
      scrubText(`{"error":"invalid api token 0d4c9a17e2b85f36a1c07be94d2f6e58"}`),
      `{"error":"invalid api token ${SCRUBBED}"}`
    )
    assert.strictEqual(scrubText("token=hunter2&x=1"), `token=${SCRUBBED}&x=1`)
    assert.strictEqual(scrubText(`"api_token": "p4ss"`), `"api_token": "${SCRUBBED}"`)
  })

  it("keeps prose, sandbox ids and pod keys", () => {
    assert.strictEqual(scrubText("missing bearer token"), "missing bearer token")
    assert.strictEqual(scrubText("unknown sandbox sb_4f9a0c2e7b1d3a65"), "unknown sandbox sb_4f9a0c2e7b1d3a65")
    assert.strictEqual(scrubText("team-a/review-bot-7f3k2 at capacity"), "team-a/review-bot-7f3k2 at capacity")
  })

  it("replaces control characters, so one reply stays one log line", () => {
    assert.strictEqual(scrubText("a\r\nb\u0000c\u2028"), "a??b?c?")
  })

  it("ignores secrets too short to search for", () => {
    assert.strictEqual(scrubText("a b c", ["a"]), "a b c")
  })
})

describe("safeExcerpt", () => {
  it("folds whitespace and control characters and bounds the length", () => {
    assert.strictEqual(safeExcerpt("404 page not found\n"), "404 page not found")
    assert.strictEqual(safeExcerpt("<html>\r\n  <body>bad gateway</body>\n</html>"), "<html> <body>bad gateway</body> </html>")
    const long = safeExcerpt("x ".repeat(1000))
    assert.isAtMost(long.length, EXCERPT_LIMIT + 1)
    assert.isTrue(long.endsWith("…"))
  })

  it("scrubs the whole body before cutting it, so no secret survives as a prefix", () => {
    const secret = "my-root-secret-value"
    const body = `${"y".repeat(EXCERPT_LIMIT - 5)} ${secret}`
    const out = safeExcerpt(body, [secret])
    assert.notInclude(out, secret.slice(0, 4))
  })
})
