/**
 * Opt-in traces over OTLP/HTTP: the real daemon with `--otlp-endpoint` pointing at an OTLP
 * receiver in this process; one Pod's reconcile, create and claim arrive as spans of one trace,
 * and a URL that is not http(s) is a usage error.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Option } from "effect"
import { spawn } from "node:child_process"
import * as http from "node:http"
import { tracingLayer } from "../../../src/Daemon.ts"
import { tracesUrl } from "../../../src/Programs/Observability/Tracing.ts"
import { BuildInfo } from "../../../src/Services/BuildInfo.ts"
import { binary, createPod, getPod, spawnDaemon, startCluster, waitFor } from "../../../testkit/Demo/Harness.ts"

interface ExportedSpan {
  readonly traceId: string
  readonly spanId: string
  readonly parentSpanId?: string
  readonly name: string
  readonly attributes?: ReadonlyArray<{ readonly key: string; readonly value: { readonly stringValue?: string } }>
}

interface TracesRequest {
  readonly resourceSpans?: ReadonlyArray<{
    readonly resource?: { readonly attributes?: ReadonlyArray<{ readonly key: string; readonly value: { readonly stringValue?: string } }> }
    readonly scopeSpans?: ReadonlyArray<{ readonly spans?: ReadonlyArray<ExportedSpan> }>
  }>
}

/** An OTLP/HTTP JSON receiver on loopback: every span posted to /v1/traces, for the scope. */
const receiver = Effect.acquireRelease(
  Effect.callback<{ readonly url: string; readonly spans: Array<ExportedSpan>; readonly services: Set<string>; readonly server: http.Server }>(
    (resume) => {
      const spans: Array<ExportedSpan> = []
      const services = new Set<string>()
      const server = http.createServer((req, res) => {
        let body = ""
        req.setEncoding("utf8").on("data", (chunk: string) => (body += chunk))
        req.on("end", () => {
          if (req.method === "POST" && req.url === "/v1/traces") {
            const parsed = JSON.parse(body) as TracesRequest
            for (const resource of parsed.resourceSpans ?? []) {
              for (const a of resource.resource?.attributes ?? []) {
                if (a.key === "service.name" && a.value.stringValue !== undefined) services.add(a.value.stringValue)
              }
              for (const scope of resource.scopeSpans ?? []) spans.push(...(scope.spans ?? []))
            }
          }
          res.writeHead(200, { "content-type": "application/json" }).end("{}")
        })
      })
      server.listen(0, "127.0.0.1", () => {
        const address = server.address()
        const port = typeof address === "object" && address !== null ? address.port : 0
        resume(Effect.succeed({ url: `http://127.0.0.1:${port}`, spans, services, server }))
      })
    }
  ),
  ({ server }) => Effect.callback<void>((resume) => void server.close(() => resume(Effect.void)))
)

const attribute = (span: ExportedSpan, key: string) => span.attributes?.find((a) => a.key === key)?.value.stringValue

describe("OTLP traces", () => {
  it("the traces URL is the base endpoint plus /v1/traces", () => {
    assert.strictEqual(tracesUrl("http://collector:4318"), "http://collector:4318/v1/traces")
    assert.strictEqual(tracesUrl("http://collector:4318/"), "http://collector:4318/v1/traces")
  })

  it.live("with --otlp-endpoint, one Pod's reconcile, create and claim are spans of one trace", () =>
    Effect.scoped(Effect.gen(function*() {
      const otlp = yield* receiver
      const cluster = yield* startCluster({ warmPerPool: 2 })
      const daemon = yield* spawnDaemon(cluster, { extraArgs: ["--otlp-endpoint", otlp.url] })
      yield* createPod(cluster, "create", "traced")
      yield* waitFor("running", "the Pod Running", Effect.sync(() => Option.filter(getPod(cluster, "traced"), (p) => p.phase === "Running")), {
        timeout: "20 seconds",
        describe: daemon.output
      })
      const key = `${cluster.namespace}/traced`
      const trace = yield* waitFor(
        "exported",
        "the reconcile, create and claim spans at the receiver",
        Effect.sync(() => {
          const root = otlp.spans.find((s) => s.name === "PodController.reconcile" && attribute(s, "pod") === key &&
            otlp.spans.some((c) => c.traceId === s.traceId && c.name === "Provider.createPod"))
          if (root === undefined) return Option.none()
          const inTrace = otlp.spans.filter((s) => s.traceId === root.traceId)
          return inTrace.some((s) => s.name === "SandboxdClient.claim") ? Option.some({ root, inTrace }) : Option.none()
        }),
        { timeout: "20 seconds", describe: () => otlp.spans.map((s) => s.name).join(", ") }
      )
      const create = trace.inTrace.find((s) => s.name === "Provider.createPod")!
      assert.strictEqual(create.parentSpanId, trace.root.spanId, "create is a child of the reconcile")
      assert.isTrue(otlp.services.has("vk-sandbox"))
    })), { timeout: 60_000 })

  it.live("an --otlp-endpoint that is not an http(s) URL is a usage error (exit 2)", () =>
    Effect.gen(function*() {
      const result = yield* Effect.callback<{ readonly code: number | null; readonly stderr: string }>((resume) => {
        const child = spawn(binary, ["--otlp-endpoint", "grpc://collector:4317"], {
          env: { PATH: process.env["PATH"] ?? "" },
          stdio: ["ignore", "ignore", "pipe"]
        })
        let stderr = ""
        child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk))
        child.on("close", (code) => resume(Effect.succeed({ code, stderr })))
        return Effect.sync(() => child.kill("SIGKILL"))
      })
      assert.strictEqual(result.code, 2)
      assert.match(result.stderr, /^vk-sandbox: .*otlp-endpoint.*\n$/)
    }), { timeout: 30_000 })

  it.effect("without --otlp-endpoint the tracer is off: a named span is a no-op, not recorded", () =>
    Effect.gen(function*() {
      const named = Effect.withSpan(Effect.currentSpan, "PodController.reconcile", { attributes: { pod: "ns/p" } })
      const traced = yield* named
      assert.notStrictEqual(traced.spanId, "noop", "with the tracer on (the default), the span is real")
      const layer = yield* tracingLayer({ otlpEndpoint: "", nodeName: "n" }).pipe(
        Effect.provide(Layer.succeed(BuildInfo, { version: "test", revision: "test", builtAt: "test" }))
      )
      const off = yield* Effect.option(named.pipe(Effect.provide(layer)))
      assert.isTrue(Option.isNone(off) || off.value.spanId === "noop")
    }))
})
