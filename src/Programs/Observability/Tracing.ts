/**
 * Opt-in traces: with `--otlp-endpoint` (or `OTEL_EXPORTER_OTLP_ENDPOINT`) the spans the code
 * names (`Effect.fn`, `Effect.withSpan`: the reconcile of each Pod key, create, claim, commit,
 * release, …) are exported as OTLP/HTTP JSON to `<endpoint>/v1/traces` with the exporter Effect
 * ships; no OpenTelemetry SDK. Loaded only when the endpoint is set (see `Daemon.ts`).
 */
import { Layer } from "effect"
import * as FetchHttpClient from "effect/http/FetchHttpClient"
import * as OtlpSerialization from "effect/observability/OtlpSerialization"
import * as OtlpTracer from "effect/observability/OtlpTracer"
import type { BuildInfoShape } from "../../Services/BuildInfo.ts"

/** The traces URL of an OTLP/HTTP base endpoint, as the OpenTelemetry exporter variables define it. */
export const tracesUrl = (endpoint: string): string => `${endpoint.replace(/\/+$/, "")}/v1/traces`

export const layer = (endpoint: string, build: BuildInfoShape, nodeName: string) =>
  OtlpTracer.layer({
    url: tracesUrl(endpoint),
    resource: {
      serviceName: "vk-sandbox",
      serviceVersion: build.version,
      attributes: { "service.instance.id": nodeName, "vcs.revision": build.revision }
    },
    exportInterval: "1 second",
    shutdownTimeout: "2 seconds"
  }).pipe(Layer.provide(Layer.mergeAll(FetchHttpClient.layer, OtlpSerialization.layerJson)))
