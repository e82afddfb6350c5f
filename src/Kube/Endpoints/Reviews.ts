/**
 * The reviews the kubelet port asks for: a TokenReview of a bearer token (KAPI-1 — who a kubelet
 * API request comes from) and a SubjectAccessReview of one request (KAPI-2 — every request but
 * /healthz is authorized for this node). Nothing is stored; the reply is the answer. They wait on
 * the review limiter, not the Pods' (KAPI-5 — reviews wait on their own limiter).
 */
import { HttpMethod } from "@kubernetes/client-node"
import { Effect, Redacted } from "effect"
import { type AccessVerdict, accessReviewBody, accessVerdict, type NodeAccess, tokenReviewBody, type TokenVerdict, tokenVerdict } from "../../Schemas/Reviews.ts"
import type { KubeError } from "../../Services/KubeApi.ts"
import { decoded } from "../Status.ts"
import type { Transport } from "../Transport.ts"

export const tokenReviewsPath = "/apis/authentication.k8s.io/v1/tokenreviews"
export const accessReviewsPath = "/apis/authorization.k8s.io/v1/subjectaccessreviews"

export const make = ({ raw }: Transport) => {
  const reviewToken = (token: Redacted.Redacted<string>): Effect.Effect<TokenVerdict, KubeError> =>
    raw("reviewToken", { method: HttpMethod.POST, path: tokenReviewsPath, body: tokenReviewBody(Redacted.value(token)), review: true }).pipe(
      Effect.flatMap(decoded("reviewToken", "token review", tokenVerdict))
    )

  const reviewAccess = (access: NodeAccess): Effect.Effect<AccessVerdict, KubeError> =>
    raw("reviewAccess", { method: HttpMethod.POST, path: accessReviewsPath, body: accessReviewBody(access), review: true }).pipe(
      Effect.flatMap(decoded("reviewAccess", "subject access review", accessVerdict))
    )

  return { reviewToken, reviewAccess }
}
