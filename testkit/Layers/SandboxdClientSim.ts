/**
 * A `SandboxdClient` backed directly by the sandboxd simulator model: no sockets, so unit tests
 * run on `TestClock` alone. Requests and replies still take their wire form (headers, JSON
 * bodies, statuses) and go through the live client's interpretation, so the mapping is the same.
 */
import { Duration, Effect, Layer, Redacted, Semaphore } from "effect"
import { AppConfig } from "../../src/Services/Config.ts"
import type { ClaimId } from "../../src/Schemas/Ids.ts"
import { claimRequestBody } from "../../src/Schemas/Sandboxd.ts"
import {
  type ClaimSpec,
  SandboxdClient,
  type SandboxdDecodeError,
  SandboxdTimeout,
  SandboxdUnreachable
} from "../../src/Services/SandboxdClient.ts"
import { SandboxdSim, type SandboxdSimOptions } from "../Simulators/Sandboxd/Model.ts"
import {
  asListError,
  capReply,
  interpretClaim,
  interpretGet,
  interpretHealthz,
  interpretInfo,
  interpretList,
  interpretRelease,
  interpretRootRelease,
  listPath,
  onlyClaimRef,
  type RawReply,
  releasePath,
  sandboxPath,
  type SandboxdClientShape,
  secretsOf
} from "../../src/Layers/SandboxdClientHttp.ts"

export const make: Effect.Effect<SandboxdClientShape, never, SandboxdSim | AppConfig> = Effect.gen(function*() {
  const sim = yield* SandboxdSim
  const config = yield* AppConfig
  const permits = yield* Semaphore.make(Math.max(1, config.sandboxdMaxConcurrency))
  const timeoutMillis = Duration.toMillis(config.sandboxdTimeout)

  const exchange = (
    operation: string,
    method: "GET" | "POST",
    path: string,
    token: Redacted.Redacted<string> | undefined,
    body?: string,
    successStatus = 200
  ) => {
    const bearer = token === undefined ? "" : Redacted.value(token)
    return sim.handle({
      method,
      path,
      authorization: bearer === "" ? undefined : `Bearer ${bearer}`,
      contentType: body === undefined ? undefined : "application/json",
      body: body ?? ""
    }).pipe(
      Effect.flatMap((response): Effect.Effect<RawReply, SandboxdUnreachable | SandboxdDecodeError> => {
        switch (response._tag) {
          case "Reply":
            return Effect.fromResult(capReply(operation, successStatus, { status: response.status, body: response.body }))
          // Over HTTP a reply stalled mid-body leaves the client waiting: only the timeout ends it.
          case "Stall":
            return Effect.never
          case "Drop":
          case "Truncate":
            // The request reached the model: like a reset after sending, its outcome is unknown.
            return Effect.fail(new SandboxdUnreachable({ operation, message: `${method} ${path}: connection closed` }))
        }
      }),
      Effect.timeoutOrElse({
        duration: config.sandboxdTimeout,
        orElse: () =>
          Effect.fail(
            new SandboxdTimeout({
              operation,
              timeoutMillis,
              message: `${method} ${path} took longer than ${timeoutMillis} ms`
            })
          )
      }),
      permits.withPermits(1)
    )
  }

  const nodeSecrets = secretsOf(config.sandboxdToken)

  const claim = Effect.fn("SandboxdClient.claim")(function*(spec: ClaimSpec) {
    const reply = yield* exchange(
      "claim",
      "POST",
      "/v1/claim",
      config.sandboxdToken,
      JSON.stringify(claimRequestBody(spec))
    )
    return yield* Effect.fromResult(interpretClaim(reply, nodeSecrets))
  })

  const release = Effect.fn("SandboxdClient.release")(
    function*(id: ClaimId, claimToken: Redacted.Redacted<string>) {
      const path = yield* Effect.fromResult(releasePath(id))
      const reply = yield* exchange("release", "POST", path, claimToken, undefined, 204)
      return yield* Effect.fromResult(interpretRelease(reply, secretsOf(config.sandboxdToken, claimToken)))
    }
  )

  const releaseAsRoot = Effect.fn("SandboxdClient.releaseAsRoot")(function*(id: ClaimId) {
    const path = yield* Effect.fromResult(releasePath(id))
    const reply = yield* exchange("release", "POST", path, config.sandboxdToken, undefined, 204)
    return yield* Effect.fromResult(interpretRootRelease(reply, nodeSecrets))
  })

  const list = (claimRef: string) =>
    exchange("list", "GET", listPath(claimRef), config.sandboxdToken).pipe(
      Effect.flatMap((reply) => Effect.fromResult(interpretList(reply, nodeSecrets))),
      Effect.mapError(asListError("list"))
    )

  return SandboxdClient.of({
    claim,
    release,
    releaseAsRoot,
    listSandboxes: list("").pipe(Effect.withSpan("SandboxdClient.listSandboxes")),
    listByClaimRef: (claimRef) =>
      list(claimRef).pipe(Effect.map(onlyClaimRef(claimRef)), Effect.withSpan("SandboxdClient.listByClaimRef")),
    getSandbox: (id) =>
      Effect.fromResult(sandboxPath("get", id)).pipe(
        Effect.flatMap((path) => exchange("get", "GET", path, config.sandboxdToken)),
        Effect.flatMap((reply) => Effect.fromResult(interpretGet(id, reply, nodeSecrets))),
        Effect.mapError(asListError("get")),
        Effect.withSpan("SandboxdClient.getSandbox")
      ),
    info: exchange("info", "GET", "/v1/info", config.sandboxdToken).pipe(
      Effect.flatMap((reply) => Effect.fromResult(interpretInfo(reply, nodeSecrets))),
      Effect.mapError(asListError("info")),
      Effect.withSpan("SandboxdClient.info")
    ),
    healthz: exchange("healthz", "GET", "/healthz", undefined).pipe(
      Effect.flatMap((reply) => Effect.fromResult(interpretHealthz(reply))),
      Effect.withSpan("SandboxdClient.healthz")
    )
  })
})

/** The client over a `SandboxdSim` already in context. */
export const layer: Layer.Layer<SandboxdClient, never, SandboxdSim | AppConfig> = Layer.effect(SandboxdClient, make)

/**
 * A fresh simulator plus a client for it; both are in the output so tests can drive the model.
 * The client authenticates with `AppConfig.sandboxdToken`: give the simulator the same root token
 * (or `""` on both for an open node).
 */
export const layerWithSim = (
  options: SandboxdSimOptions
): Layer.Layer<SandboxdClient | SandboxdSim, never, AppConfig> =>
  layer.pipe(Layer.provideMerge(Layer.fresh(SandboxdSim.layer(options))))
