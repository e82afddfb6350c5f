/**
 * Resolving a claim's Pod IP (with its once-per-claim warning) and pushing Running (CRT-20 — push
 * Running).
 */
import type { V1Pod } from "@kubernetes/client-node"
import { Effect } from "effect"
import type { ClaimRecord } from "../../Schemas/Claims.ts"
import { AppConfig } from "../../Services/Config.ts"
import { ProviderEvents } from "../../Services/ProviderEvents.ts"
import { type PodIp, resolvePodIp } from "./PodIp.ts"
import { runningPod } from "./Status.ts"

/** Only an IP literal goes into podIP/hostIP (see PodIp.ts), logging one warning per claim when neither source gives an IP. */
export const podIpFor = Effect.fnUntraced(function*(claim: ClaimRecord) {
  const config = yield* AppConfig
  const events = yield* ProviderEvents
  const ip: PodIp = resolvePodIp(claim.address, config.nodeIp)
  if (ip._tag === "None" && (yield* events.firstIpWarning(claim.id))) {
    yield* Effect.logWarning("sandbox address is not an IP and no --node-ip is set; the Pod reports no IP").pipe(
      Effect.annotateLogs({ claim: claim.id, addr: claim.address })
    )
  }
  return ip
})

/** CRT-20: push a copy of `pod` with the claim-id annotation and the Running status. */
export const pushRunning = Effect.fnUntraced(function*(pod: V1Pod, claim: ClaimRecord) {
  const events = yield* ProviderEvents
  const ip = yield* podIpFor(claim)
  yield* events.pushStatus(runningPod(pod, claim, ip))
})
