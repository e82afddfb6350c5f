/**
 * The simulator's answers to TokenReview and SubjectAccessReview (created, never stored), shaped as
 * kube-apiserver answers them (201, the request echoed with a status). The simulator knows one
 * identity: its bearer token names `vk-sandbox-sim` in `system:masters`, which every access review
 * allows; every other token is rejected and every other user denied.
 */
import { Result } from "effect"
import { isRecord } from "./Patch.ts"
import { type ApiStatusError, badRequest, type JsonObject } from "./Status.ts"

export const simUser = { username: "vk-sandbox-sim", groups: ["system:masters", "system:authenticated"] } as const

const specOf = (body: unknown, kind: string): Result.Result<JsonObject, ApiStatusError> =>
  isRecord(body) && isRecord(body["spec"])
    ? Result.succeed(body["spec"])
    : Result.fail(badRequest(`${kind} in version "v1" cannot be handled as a ${kind}: spec is required`))

const reply = (apiVersion: string, kind: string, spec: JsonObject, status: JsonObject): JsonObject => ({
  kind,
  apiVersion,
  metadata: { creationTimestamp: null },
  spec,
  status
})

/** `POST /apis/authentication.k8s.io/v1/tokenreviews`; `token` is the simulator's own (undefined: none). */
export const tokenReview = (body: unknown, token: string | undefined): Result.Result<JsonObject, ApiStatusError> =>
  Result.map(specOf(body, "TokenReview"), (spec) =>
    reply("authentication.k8s.io/v1", "TokenReview", spec, token !== undefined && spec["token"] === token
      ? { authenticated: true, user: simUser }
      : { user: {}, error: "invalid bearer token" }))

/** `POST /apis/authorization.k8s.io/v1/subjectaccessreviews`. */
export const accessReview = (body: unknown): Result.Result<JsonObject, ApiStatusError> =>
  Result.map(specOf(body, "SubjectAccessReview"), (spec) => {
    const groups = Array.isArray(spec["groups"]) ? spec["groups"] : []
    return reply(
      "authorization.k8s.io/v1",
      "SubjectAccessReview",
      spec,
      groups.includes("system:masters") ? { allowed: true } : { allowed: false, reason: "the simulator allows system:masters only" }
    )
  })
