/**
 * Which certificate the kubelet port serves (TLS-2 — which certificate; TLS-4 — vk-cocoon's
 * certificate is reused when it is usable): the operator's `--tls-cert`/`--tls-key` (strict: never
 * a fallback), else vk-cocoon's kubelet pair when it is usable, else self-signed with a typed
 * reason logged (info when there is no vk-cocoon pair, warn when one is there but unusable).
 * `vk_sandbox_kubelet_tls_info{source}` names the choice.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Metric, Option } from "effect"
import { TestClock } from "effect/testing"
import { X509Certificate } from "node:crypto"
import { mkdir, writeFile } from "node:fs/promises"
import { join } from "node:path"
import { generateSelfSigned } from "../../../src/Programs/Kubelet/SelfSigned.ts"
import { type KubeletTlsConfig, loadKubeletTls } from "../../../src/Programs/Kubelet/Tls.ts"
import { testConfig } from "../../../testkit/Config.ts"
import { makeLogCapture } from "../../support/Logs.ts"
import { tempDir as makeTempDir } from "../../support/TempDir.ts"

const tempDir = makeTempDir("kubelet-tls-source-")
const write = (path: string, text: string) => Effect.promise(() => writeFile(path, text))

/**
 * A directory for vk-cocoon's pair as vk-cocoon names it, the config that points at it, and
 * `writePair`: a pair made now (by the clock in use) written there.
 */
const cocoonDir = Effect.gen(function*() {
  const dir = yield* tempDir
  const cert = join(dir, "vk-kubelet.crt")
  const key = join(dir, "vk-kubelet.key")
  const config = (overrides: Partial<KubeletTlsConfig> = {}): KubeletTlsConfig =>
    testConfig({ nodeName: "n1-sandboxd", vkCocoonTlsCert: cert, vkCocoonTlsKey: key, ...overrides })
  const writePair = Effect.gen(function*() {
    const pair = yield* generateSelfSigned("vk-cocoon-node", "")
    yield* write(cert, pair.certPem)
    yield* write(key, pair.keyPem)
    return pair
  })
  return { dir, cert, key, config, writePair }
})

/** The choice, the log lines it wrote, and the tls_info series it set, in a registry of its own. */
const choose = (config: KubeletTlsConfig) =>
  Effect.gen(function*() {
    const capture = makeLogCapture()
    const material = yield* loadKubeletTls(config).pipe(Effect.provide(capture.layer))
    const sources = (yield* Metric.snapshot)
      .filter((series) => series.id === "vk_sandbox_kubelet_tls_info")
      .map((series) => series.attributes?.["source"])
    return { material, lines: capture.lines, sources }
  }).pipe(Effect.provideService(Metric.MetricRegistry, new Map()))

const fingerprint = (pem: string) => new X509Certificate(pem).fingerprint256

/** The fallback line of a self-signed choice: its level and reason. */
const fallback = (lines: ReturnType<typeof makeLogCapture>["lines"]) => {
  const line = lines.find((l) => l.message === "vk-cocoon kubelet certificate not reused; self-signing")
  return line === undefined
    ? Option.none()
    : Option.some({ level: line.level, reason: line.annotations["reason"], error: line.annotations["error"] })
}

describe("the kubelet certificate's source", () => {
  it.effect("vk-cocoon's usable pair is served, named in the log line and the metric", () =>
    Effect.gen(function*() {
      const { cert, config, writePair } = yield* cocoonDir
      const pair = yield* writePair
      const { material, lines, sources } = yield* choose(config())
      assert.strictEqual(material.source, "vk-cocoon")
      assert.strictEqual(fingerprint(material.certPem), fingerprint(pair.certPem))
      assert.strictEqual(material.keyPem, pair.keyPem)
      assert.deepStrictEqual(sources, ["vk-cocoon"])
      const reused = lines.find((l) => l.message === "kubelet certificate: reusing vk-cocoon's")
      assert.strictEqual(reused?.level, "Info")
      assert.strictEqual(reused?.annotations["cert"], cert)
      assert.isTrue(Option.isNone(fallback(lines)))
    }).pipe(Effect.scoped))

  it.effect("no vk-cocoon pair (missing, or whitespace-only files as systemd's fallback leaves them): self-signed, logged at info", () =>
    Effect.gen(function*() {
      const { cert, key, config } = yield* cocoonDir
      const missing = yield* choose(config())
      assert.strictEqual(missing.material.source, "self-signed")
      assert.deepStrictEqual(missing.sources, ["self-signed"])
      const line = Option.getOrThrow(fallback(missing.lines))
      assert.deepStrictEqual([line.level, line.reason], ["Info", "absent"])
      assert.strictEqual((line.error as { readonly _tag?: unknown })._tag, "VkCocoonPairUnused")

      yield* write(cert, "\n")
      yield* write(key, "  \n")
      const blank = yield* choose(config())
      assert.strictEqual(blank.material.source, "self-signed")
      assert.deepStrictEqual(Option.getOrThrow(fallback(blank.lines)).reason, "absent")

      // Cleared paths: reuse is off, nothing is read.
      const off = yield* choose(config({ vkCocoonTlsCert: "", vkCocoonTlsKey: "" }))
      assert.strictEqual(off.material.source, "self-signed")
      const offLine = Option.getOrThrow(fallback(off.lines))
      assert.deepStrictEqual([offLine.level, offLine.reason], ["Info", "disabled"])
    }).pipe(Effect.scoped))

  it.effect("a pair that is there but unusable: self-signed, the reason logged at warn", () =>
    Effect.gen(function*() {
      const { dir, cert, key, config } = yield* cocoonDir
      const pair = yield* generateSelfSigned("vk-cocoon-node", "")
      const other = yield* generateSelfSigned("other", "")
      const cases: ReadonlyArray<readonly [string, Effect.Effect<void>, string]> = [
        ["the key missing", write(cert, pair.certPem), "incomplete"],
        ["the key a directory", Effect.promise(() => mkdir(join(dir, "keydir"))), "unreadable"],
        ["another certificate's key", write(key, other.keyPem), "invalid"],
        ["no PEM in the key", write(key, "-----BEGIN PRIVATE KEY-----\nc2VjcmV0LWtleS1ieXRlcw==\n-----END PRIVATE KEY-----\n"), "invalid"]
      ]
      for (const [what, setUp, reason] of cases) {
        yield* setUp
        const keyPath = what === "the key a directory" ? join(dir, "keydir") : key
        const { material, lines, sources } = yield* choose(config({ vkCocoonTlsKey: keyPath }))
        assert.strictEqual(material.source, "self-signed", what)
        assert.deepStrictEqual(sources, ["self-signed"], what)
        const line = Option.getOrThrow(fallback(lines))
        assert.deepStrictEqual([line.level, line.reason], ["Warn", reason], what)
        // The key's text never reaches the log.
        assert.notInclude(JSON.stringify(lines.map((l) => [l.message, String(l.annotations["error"])])), "c2VjcmV0LWtleS1ieXRlcw", what)
      }
    }).pipe(Effect.scoped))

  it.effect("an expired vk-cocoon certificate is not served", () =>
    Effect.gen(function*() {
      const { config, writePair } = yield* cocoonDir
      // Made at the TestClock's epoch: valid ten years from then.
      yield* writePair
      assert.strictEqual((yield* choose(config())).material.source, "vk-cocoon")
      yield* TestClock.adjust("3651 days")
      const expired = yield* choose(config())
      assert.strictEqual(expired.material.source, "self-signed")
      const line = Option.getOrThrow(fallback(expired.lines))
      assert.deepStrictEqual([line.level, line.reason], ["Warn", "expired"])
    }).pipe(Effect.scoped))

  it.effect("--tls-cert/--tls-key win over vk-cocoon's pair, and stay strict: a bad one fails, never falls back", () =>
    Effect.gen(function*() {
      const { dir, cert, key, config } = yield* cocoonDir
      const cocoon = yield* generateSelfSigned("vk-cocoon-node", "")
      const mine = yield* generateSelfSigned("operator", "")
      yield* write(cert, cocoon.certPem)
      yield* write(key, cocoon.keyPem)
      yield* write(join(dir, "tls.crt"), mine.certPem)
      yield* write(join(dir, "tls.key"), mine.keyPem)
      const given = yield* choose(config({ tlsCert: join(dir, "tls.crt"), tlsKey: join(dir, "tls.key") }))
      assert.strictEqual(given.material.source, "flags")
      assert.strictEqual(fingerprint(given.material.certPem), fingerprint(mine.certPem))
      assert.deepStrictEqual(given.sources, ["flags"])

      const broken = yield* Effect.flip(choose(config({ tlsCert: join(dir, "absent.crt"), tlsKey: join(dir, "tls.key") })))
      assert.strictEqual(broken._tag, "KubeletTlsError")
      assert.include(broken.message, join(dir, "absent.crt"))
    }).pipe(Effect.scoped))
})
