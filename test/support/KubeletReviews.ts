/**
 * A KubeApi for tests of the kubelet port: the in-memory cluster's, with the two reviews scripted
 * (which tokens name which users, which accesses are allowed), every review asked recorded, and a
 * switch that makes either review fail as an unreachable apiserver does.
 */
import { Effect, Redacted } from "effect"
import type { KubeUser, NodeAccess } from "../../src/Schemas/Reviews.ts"
import { KubeApi, KubeUnavailable } from "../../src/Services/KubeApi.ts"
import * as KubeApiMemory from "../../testkit/Layers/KubeApiMemory.ts"
import { ClusterModel } from "../../testkit/Simulators/Apiserver/Model.ts"

export interface ReviewScript {
  /** Token → the user a TokenReview names; any other token is rejected. */
  readonly tokens: Readonly<Record<string, KubeUser>>
  /** Whether a SubjectAccessReview allows this access. */
  readonly allows: (access: NodeAccess) => boolean
}

export interface ReviewLog {
  /** The tokens reviewed, in order. */
  readonly tokens: Array<string>
  /** The accesses reviewed, in order, as `user verb nodes/subresource node`. */
  readonly accesses: Array<string>
  /** While true, that review fails with a transport error (status 0). */
  failTokens: boolean
  failAccess: boolean
}

export const user = (name: string, groups: ReadonlyArray<string> = [], extra: KubeUser["extra"] = {}): KubeUser => ({
  name,
  uid: `uid-${name}`,
  groups: [...groups, "system:authenticated"],
  extra
})

export const describeAccess = (access: NodeAccess) =>
  `${access.user.name} ${access.verb} nodes/${access.subresource} ${access.node}`

const unreachable = (operation: string) =>
  new KubeUnavailable({ operation, status: 0, message: "connect ECONNREFUSED 127.0.0.1:6443" })

export const scriptedReviews = (script: ReviewScript): { readonly kube: KubeApi["Service"]; readonly log: ReviewLog } => {
  const log: ReviewLog = { tokens: [], accesses: [], failTokens: false, failAccess: false }
  const kube = KubeApi.of({
    ...KubeApiMemory.make(new ClusterModel()),
    reviewToken: (token) =>
      Effect.suspend(() => {
        const text = Redacted.value(token)
        log.tokens.push(text)
        if (log.failTokens) return Effect.fail(unreachable("reviewToken"))
        const named = script.tokens[text]
        return Effect.succeed(
          named === undefined ? { _tag: "Rejected", reason: "invalid bearer token" } as const : { _tag: "Authenticated", user: named } as const
        )
      }),
    reviewAccess: (access) =>
      Effect.suspend(() => {
        log.accesses.push(describeAccess(access))
        if (log.failAccess) return Effect.fail(unreachable("reviewAccess"))
        const allowed = script.allows(access)
        return Effect.succeed({ allowed, reason: allowed ? "" : "no RBAC policy matched" })
      })
  })
  return { kube, log }
}
