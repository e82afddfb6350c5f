/**
 * The `SandboxdClient` over any round trip: the HTTP layer gives it node:http, the testkit layer
 * the simulator model. Every request waits for one of `--sandboxd-max-concurrency` permits and is
 * then bounded by `--sandboxd-timeout`; a node-token request refused (401/403) is sent once more
 * when the token file holds a new token. Error text is scrubbed of the request's secrets and, on
 * the error path only, of every claim token `KnownSecrets` holds. Every exchange is reported to
 * `DependencyRecovery` when it is provided (Q-08 — a dependency that comes back wakes the keys
 * waiting on it).
 */
import { Cause, Duration, Effect, Exit, Option, Redacted, Result, Semaphore, Stream } from "effect"
import type { ClaimId } from "../Schemas/Ids.ts"
import { claimRequestBody } from "../Schemas/Sandboxd.ts"
import type { AppConfigShape } from "../Schemas/Config.ts"
import { DependencyRecovery } from "../Services/DependencyRecovery.ts"
import type { KnownSecrets } from "../Services/KnownSecrets.ts"
import {
  type ClaimSpec,
  type ListedSandbox,
  SandboxdClient,
  SandboxdListError,
  SandboxdTimeout,
  type SandboxdTransportError,
  type SandboxdUnauthorized
} from "../Services/SandboxdClient.ts"
import { SandboxdToken } from "../Services/SandboxdToken.ts"
import {
  interpretClaim,
  interpretGet,
  interpretHealthz,
  interpretInfo,
  interpretList,
  interpretRelease,
  interpretRootRelease,
  isRefusal
} from "./Replies.ts"
import { CLAIM_PATH, HEALTHZ_PATH, INFO_PATH, listPath, releasePath, sandboxPath } from "./Routes.ts"
import type { Exchange, RoundTrip } from "./Transport.ts"

export type SandboxdClientShape = SandboxdClient["Service"]

/** Wraps a list/info/get failure so it can never be mistaken for an empty answer. */
export const asListError = (operation: "list" | "info" | "get") => (reason: SandboxdTransportError | SandboxdUnauthorized) =>
  new SandboxdListError({ operation, reason, message: `sandboxd ${operation}: ${reason.message}` })

/** Keeps only rows for `claimRef`, whatever the server did with the query. */
export const onlyClaimRef = (claimRef: string) => (rows: ReadonlyArray<ListedSandbox>) =>
  rows.filter((row) => row.claimRef === claimRef)

/** The secrets a reply to a request carrying these tokens must not repeat. */
export const secretsOf = (...tokens: ReadonlyArray<Redacted.Redacted<string> | undefined>): ReadonlyArray<string> =>
  tokens.flatMap((token) => {
    const value = token === undefined ? "" : Redacted.value(token)
    return value === "" ? [] : [value]
  })

/** The node token read at startup, never re-read: for a client without `SandboxdToken`. */
const startupToken = (config: AppConfigShape): SandboxdToken["Service"] =>
  SandboxdToken.of({
    current: Effect.succeed(config.sandboxdToken),
    reload: Effect.succeed(false),
    noteReply: () => Effect.void,
    acceptedAgain: Stream.empty
  })

/**
 * The client over `roundTrip`. The node token comes from `SandboxdToken` when it is provided (the
 * token file, re-read when it changes), else it is the one read at startup.
 */
export const makeClient = (
  roundTrip: RoundTrip,
  config: AppConfigShape,
  knownSecrets: KnownSecrets["Service"]
): Effect.Effect<SandboxdClientShape> =>
  Effect.gen(function*() {
    const permits = yield* Semaphore.make(Math.max(1, config.sandboxdMaxConcurrency))
    const timeoutMillis = Duration.toMillis(config.sandboxdTimeout)
    const tokens = Option.getOrElse(yield* Effect.serviceOption(SandboxdToken), () => startupToken(config))
    // every exchange is reported, so the first answer after a failure can wake what waits on sandboxd.
    const recovery = yield* Effect.serviceOption(DependencyRecovery)
    const noteExchange = Option.match(recovery, {
      onNone: () => (_answered: boolean) => Effect.void,
      onSome: (service) => (answered: boolean) => service.note("sandboxd", answered)
    })

    /** One bounded exchange: waits for a permit, then the timeout covers the request itself. */
    const exchange = (exchange: Exchange) =>
      roundTrip(exchange).pipe(
        Effect.timeoutOrElse({
          duration: config.sandboxdTimeout,
          orElse: () =>
            Effect.fail(
              new SandboxdTimeout({
                operation: exchange.operation,
                timeoutMillis,
                message: `${exchange.method} ${exchange.path} took longer than ${timeoutMillis} ms`
              })
            )
        }),
        // A reply is an answer unless it is a 5xx; no reply (unreachable, timed out) is none.
        Effect.onExit((exit) =>
          Exit.isSuccess(exit) ? noteExchange(exit.value.status < 500) : Cause.hasInterruptsOnly(exit.cause) ? Effect.void : noteExchange(false)
        ),
        permits.withPermits(1)
      )

    /**
     * An exchange carrying the node token. A refusal (401/403) re-reads the token file at once and,
     * when the token changed, sends the request once more with the new one: a refused request made
     * nothing, so sending it again is safe. The reply comes with the secrets it must not repeat.
     */
    const withNodeToken = (request: Omit<Exchange, "token">) =>
      Effect.gen(function*() {
        const token = yield* tokens.current
        const reply = yield* exchange({ ...request, token })
        if (!isRefusal(reply) || !(yield* tokens.reload)) {
          yield* tokens.noteReply(isRefusal(reply))
          return { reply, secrets: secretsOf(token) }
        }
        const fresh = yield* tokens.current
        const again = yield* exchange({ ...request, token: fresh })
        yield* tokens.noteReply(isRefusal(again))
        return { reply: again, secrets: secretsOf(token, fresh) }
      })

    /**
     * `interpret(reply)` scrubbed of the request's own secrets; when that fails (its message may
     * quote sandboxd), interpreted again scrubbed of every claim token held now as well. Only the
     * error path reads the claim table, and the whole text is scrubbed before any excerpt is cut.
     */
    const interpretScrubbed = <A, E>(
      own: ReadonlyArray<string>,
      interpret: (secrets: ReadonlyArray<string>) => Result.Result<A, E>
    ): Effect.Effect<A, E> => {
      const first = interpret(own)
      return Result.isSuccess(first)
        ? Effect.succeed(first.success)
        : Effect.flatMap(knownSecrets.current, (held) => Effect.fromResult(interpret([...own, ...secretsOf(...held)])))
    }

    const claim = Effect.fn("SandboxdClient.claim")(function*(spec: ClaimSpec) {
      const { reply, secrets } = yield* withNodeToken({
        operation: "claim",
        method: "POST",
        path: CLAIM_PATH,
        body: JSON.stringify(claimRequestBody(spec)),
        successStatus: 200
      })
      return yield* interpretScrubbed(secrets, (all) => interpretClaim(reply, all))
    })

    const release = Effect.fn("SandboxdClient.release")(
      function*(id: ClaimId, claimToken: Redacted.Redacted<string>) {
        const path = yield* Effect.fromResult(releasePath(id))
        const reply = yield* exchange({ operation: "release", method: "POST", path, token: claimToken, successStatus: 204 })
        return yield* interpretScrubbed(secretsOf(yield* tokens.current, claimToken), (secrets) => interpretRelease(reply, secrets))
      }
    )

    const releaseAsRoot = Effect.fn("SandboxdClient.releaseAsRoot")(function*(id: ClaimId) {
      const path = yield* Effect.fromResult(releasePath(id))
      const { reply, secrets } = yield* withNodeToken({ operation: "release", method: "POST", path, successStatus: 204 })
      return yield* interpretScrubbed(secrets, (all) => interpretRootRelease(reply, all))
    })

    const list = (claimRef: string) =>
      withNodeToken({ operation: "list", method: "GET", path: listPath(claimRef), successStatus: 200 }).pipe(
        Effect.flatMap(({ reply, secrets }) => interpretScrubbed(secrets, (all) => interpretList(reply, all))),
        Effect.mapError(asListError("list"))
      )

    const getSandbox = (id: ClaimId) =>
      Effect.fromResult(sandboxPath("get", id)).pipe(
        Effect.flatMap((path) => withNodeToken({ operation: "get", method: "GET", path, successStatus: 200 })),
        Effect.flatMap(({ reply, secrets }) => interpretScrubbed(secrets, (all) => interpretGet(id, reply, all))),
        Effect.mapError(asListError("get")),
        Effect.withSpan("SandboxdClient.getSandbox")
      )

    const info = withNodeToken({ operation: "info", method: "GET", path: INFO_PATH, successStatus: 200 }).pipe(
      Effect.flatMap(({ reply, secrets }) => interpretScrubbed(secrets, (all) => interpretInfo(reply, all))),
      Effect.mapError(asListError("info")),
      Effect.withSpan("SandboxdClient.info")
    )

    const healthz = exchange({ operation: "healthz", method: "GET", path: HEALTHZ_PATH, token: undefined, successStatus: 200 }).pipe(
      // The probe carries no token, but a proxy in front of sandboxd may still quote the node's.
      Effect.flatMap((reply) =>
        Effect.flatMap(tokens.current, (token) => interpretScrubbed(secretsOf(token), (secrets) => interpretHealthz(reply, secrets)))
      ),
      Effect.withSpan("SandboxdClient.healthz")
    )

    return SandboxdClient.of({
      claim,
      release,
      releaseAsRoot,
      listSandboxes: list("").pipe(Effect.withSpan("SandboxdClient.listSandboxes")),
      listByClaimRef: (claimRef) =>
        list(claimRef).pipe(Effect.map(onlyClaimRef(claimRef)), Effect.withSpan("SandboxdClient.listByClaimRef")),
      getSandbox,
      info,
      healthz
    })
  })
