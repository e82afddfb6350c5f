/**
 * May this user make this kubelet API request (KAPI-2 — every request but /healthz is authorized
 * for this node): a SubjectAccessReview per subresource the path falls under (`Attributes.ts`), for
 * the request's verb on `nodes/<subresource>` named after this node, asked in order until one
 * allows. Answers are cached (KAPI-4 — review answers are cached briefly, a failed review refuses)
 * as a kubelet caches them: an allowed one for 5 minutes, a denied one for 30 seconds; a denial
 * says whether the apiserver made it now or it came from the cache (the gate logs only the former,
 * KAPI-6 — a denial is logged once per decision, and every one counted).
 */
import { Duration, Effect } from "effect"
import type { AccessVerdict, KubeUser } from "../../Schemas/Reviews.ts"
import type { KubeApi } from "../../Services/KubeApi.ts"
import { KubeletReviewFailed } from "../../Services/KubeletServer.ts"
import { cacheCapacity } from "./Authenticate.ts"
import * as ReviewCache from "./ReviewCache.ts"

export type Authorization =
  | { readonly _tag: "Allowed"; readonly subresource: string }
  | {
    readonly _tag: "Denied"
    readonly subresources: ReadonlyArray<string>
    /** The last review's reason, "" when it gave none. */
    readonly reason: string
    /**
     * The apiserver made this decision now (a review was asked); false when every answer came
     * from the cache: the same denial already decided, and logged, within its 30 seconds.
     */
    readonly fresh: boolean
  }

export const accessTtl = { allowed: Duration.minutes(5), denied: Duration.seconds(30) } as const

/** Everything a review is asked about, in one key: the same user asking the same thing hits the cache. */
const accessKey = (user: KubeUser, verb: string, subresource: string): string =>
  JSON.stringify([
    user.name,
    user.uid,
    user.groups,
    Object.keys(user.extra).sort().map((key) => [key, user.extra[key]]),
    verb,
    subresource
  ])

export interface Authorizer {
  readonly authorize: (
    user: KubeUser,
    verb: string,
    subresources: ReadonlyArray<string>
  ) => Effect.Effect<Authorization, KubeletReviewFailed>
}

export const makeAuthorizer = (kube: Pick<KubeApi["Service"], "reviewAccess">, node: string): Authorizer => {
  const answers = ReviewCache.make<AccessVerdict>(
    cacheCapacity,
    (verdict) => verdict.allowed ? accessTtl.allowed : accessTtl.denied
  )

  const review = (user: KubeUser, verb: string, subresource: string, asked: () => void) =>
    answers.through(
      accessKey(user, verb, subresource),
      Effect.andThen(Effect.sync(asked), kube.reviewAccess({ user, verb, node, subresource }))
    ).pipe(
      Effect.mapError((cause) =>
        new KubeletReviewFailed({
          review: "SubjectAccessReview",
          message: `the SubjectAccessReview of ${verb} nodes/${subresource} failed: ${cause.message}`,
          cause
        })
      )
    )

  const authorize = (user: KubeUser, verb: string, subresources: ReadonlyArray<string>) =>
    Effect.gen(function*() {
      let reason = ""
      let fresh = false
      const asked = () => void (fresh = true)
      // In order, one at a time: a fallback is asked only when the more specific one denied.
      for (const subresource of subresources) {
        const verdict = yield* review(user, verb, subresource, asked)
        if (verdict.allowed) return { _tag: "Allowed", subresource } satisfies Authorization
        reason = verdict.reason
      }
      return { _tag: "Denied", subresources, reason, fresh } satisfies Authorization
    })

  return { authorize }
}
