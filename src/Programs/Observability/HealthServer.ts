/**
 * Plain-HTTP operator endpoints on `--metrics-addr` (default :10261): `/metrics` (Prometheus
 * text from the Effect metric registry), `/healthz` (the process and its loops are alive) and
 * `/readyz` (claims verified at startup, node registered, pod watch synced).
 */
// The module path, not the package index: the index initializes every platform module (child
// processes, the terminal, DNS, workers, ...) in the daemon's start.
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import { Effect, Layer, Schema } from "effect"
import { HttpRouter, HttpServerResponse } from "effect/http"
import { PrometheusMetrics } from "effect/observability"
import { createServer } from "node:http"
import type { ListenAddr } from "../../Schemas/Config.ts"

export interface HealthChecks {
  /** Names of the parts that are not healthy; empty = healthy. */
  readonly unhealthy: Effect.Effect<ReadonlyArray<string>>
  /** Names of the conditions not met yet; empty = ready. */
  readonly notReady: Effect.Effect<ReadonlyArray<string>>
  /** Refreshes gauges that are sampled rather than updated (e.g. claims held), before a scrape. */
  readonly beforeScrape: Effect.Effect<void>
  /** Prometheus text rendered outside the Effect registry (process and runtime families), appended. */
  readonly extraMetrics?: Effect.Effect<string>
}

const verdict = (failing: ReadonlyArray<string>) =>
  failing.length === 0
    ? HttpServerResponse.text("ok\n")
    : HttpServerResponse.text(`not ok: ${failing.join(", ")}\n`, { status: 503 })

const routes = (checks: HealthChecks) =>
  Layer.mergeAll(
    HttpRouter.add(
      "GET",
      "/metrics",
      Effect.gen(function*() {
        yield* checks.beforeScrape
        const body = yield* PrometheusMetrics.format()
        const extra = checks.extraMetrics === undefined ? "" : yield* checks.extraMetrics
        return HttpServerResponse.text(extra === "" ? body : `${body.endsWith("\n") || body === "" ? body : `${body}\n`}${extra}`, { contentType: "text/plain; version=0.0.4; charset=utf-8" })
      })
    ),
    HttpRouter.add("GET", "/healthz", Effect.map(checks.unhealthy, verdict)),
    HttpRouter.add("GET", "/readyz", Effect.map(checks.notReady, verdict))
  )

/** The metrics address cannot be bound (in use, not local): a startup error naming it. */
export class MetricsListenError extends Schema.TaggedError<MetricsListenError>()("MetricsListenError", {
  address: Schema.String,
  message: Schema.String
}) {}

/** The server as a layer; it also provides `HttpServer` so callers can read the bound address. */
export const layer = (address: ListenAddr, checks: HealthChecks) =>
  HttpRouter.serve(routes(checks), { disableLogger: true, disableListenLog: true }).pipe(
    Layer.provideMerge(
      NodeHttpServer.layer(() => createServer(), {
        port: address.port,
        ...(address.host !== "" ? { host: address.host } : {}),
        gracefulShutdownTimeout: "1 second"
      })
    ),
    // The library's ServeError has no message: the startup line would say only "ServeError: ".
    Layer.catchTag("ServeError", (error) => {
      const shown = `${address.host.includes(":") ? `[${address.host}]` : address.host}:${address.port}`
      const reason = error.cause instanceof Error ? error.cause.message : String(error.cause)
      return Layer.effectDiscard(
        Effect.fail(new MetricsListenError({ address: shown, message: `cannot listen on --metrics-addr ${shown}: ${reason}` }))
      )
    })
  )
