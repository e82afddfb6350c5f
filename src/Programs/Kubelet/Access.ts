/**
 * The kubelet port's gate: every request but `GET /healthz` is authenticated (KAPI-1 — who a
 * kubelet API request comes from) and then authorized (KAPI-2 — every request but /healthz is
 * authorized for this node) before it is routed. A refusal is a plain-text answer that says why:
 * 401 for no usable identity, 403 for a denied one, 503 when the apiserver did not answer a review
 * (KAPI-4 — review answers are cached briefly, a failed review refuses), so the client knows a
 * retry may pass. A 403 is logged once per decision the apiserver makes (KAPI-6 — a denial is
 * logged once per decision, and every one counted). User names come from certificates and the
 * apiserver: scrubbed before logging.
 */
import { Effect } from "effect"
import { scrubText } from "../../Schemas/Scrub.ts"
import type { KubeApi } from "../../Services/KubeApi.ts"
import * as Metrics from "../../Services/Metrics.ts"
import type { KubeletReviewFailed } from "../../Services/KubeletServer.ts"
import { isUnauthenticatedPath, nodeSubresources, nodeVerb } from "./Attributes.ts"
import { type Credentials, makeAuthenticator } from "./Authenticate.ts"
import { makeAuthorizer } from "./Authorize.ts"

export interface GateRequest {
  readonly method: string
  /** The path as the router reads it: what is authorized is what is served. */
  readonly pathname: string
  readonly credentials: Credentials
}

export type Gate =
  | { readonly _tag: "Pass" }
  | { readonly _tag: "Refuse"; readonly status: 401 | 403 | 503; readonly body: string }

export interface KubeletAccess {
  readonly check: (request: GateRequest) => Effect.Effect<Gate>
}

const unavailable = (error: KubeletReviewFailed): Effect.Effect<Gate> =>
  Effect.logWarning("kubelet API request refused: a review failed").pipe(
    Effect.annotateLogs({ error }),
    Effect.as<Gate>({
      _tag: "Refuse",
      status: 503,
      body: `503 Service Unavailable: the apiserver did not answer the ${error.review} this request needs, ` +
        "and nothing is let through without it; retry later\n"
    })
  )

export const make = (kube: Pick<KubeApi["Service"], "reviewToken" | "reviewAccess">, node: string): KubeletAccess => {
  const authenticator = makeAuthenticator(kube)
  const authorizer = makeAuthorizer(kube, node)

  const check = (request: GateRequest): Effect.Effect<Gate> =>
    Effect.gen(function*() {
      if (isUnauthenticatedPath(request.pathname)) return { _tag: "Pass" } satisfies Gate
      const identity = yield* authenticator.authenticate(request.credentials)
      if (identity._tag === "Unauthenticated") {
        yield* Effect.logDebug("kubelet API request refused: unauthenticated").pipe(
          Effect.annotateLogs({ method: request.method, path: scrubText(request.pathname), reason: identity.reason })
        )
        return { _tag: "Refuse", status: 401, body: `401 Unauthorized: ${identity.reason}\n` } satisfies Gate
      }
      const verb = nodeVerb(request.method)
      // A method with no verb is served by no route: the router answers it (405 or 404) unreviewed.
      if (verb === undefined) return { _tag: "Pass" } satisfies Gate
      const subresources = nodeSubresources(request.pathname)
      const decision = yield* authorizer.authorize(identity.user, verb, subresources)
      if (decision._tag === "Allowed") return { _tag: "Pass" } satisfies Gate
      const asked = subresources.map((subresource) => `nodes/${subresource}`).join(" or ")
      yield* Metrics.count(Metrics.kubeletApiDenials, { subresource: subresources[0] ?? "proxy" })
      if (decision.fresh) {
        yield* Effect.logInfo("kubelet API request forbidden").pipe(
          Effect.annotateLogs({
            user: scrubText(identity.user.name),
            via: identity.via,
            verb,
            resource: asked,
            path: scrubText(request.pathname),
            reason: scrubText(decision.reason)
          })
        )
      }
      return {
        _tag: "Refuse",
        status: 403,
        body: `403 Forbidden: user ${JSON.stringify(identity.user.name)} may not ${verb} ${asked} of node ${node}\n`
      } satisfies Gate
    }).pipe(Effect.catchTag("KubeletReviewFailed", unavailable))

  return { check }
}
