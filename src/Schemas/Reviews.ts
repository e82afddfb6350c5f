/**
 * The two review objects the kubelet API asks the apiserver for: a TokenReview
 * (authentication.k8s.io/v1: who holds this bearer token) and a SubjectAccessReview
 * (authorization.k8s.io/v1: may this user do this to this node). The request bodies are built
 * here and the replies decoded with Schema; only the fields the daemon reads are kept.
 */
import { Option, Schema } from "effect"

const opt = Schema.optionalKey

/** Who a request comes from, as the apiserver names users: what a SubjectAccessReview is asked about. */
export interface KubeUser {
  readonly name: string
  /** "" when the authenticator gave none (a certificate's identity has none). */
  readonly uid: string
  readonly groups: ReadonlyArray<string>
  readonly extra: Readonly<Record<string, ReadonlyArray<string>>>
}

/** What a TokenReview said of a token. */
export type TokenVerdict =
  | { readonly _tag: "Authenticated"; readonly user: KubeUser }
  /** `reason` is the apiserver's `status.error`, or a fixed text when it gave none. */
  | { readonly _tag: "Rejected"; readonly reason: string }

/** One question for a SubjectAccessReview: may `user` do `verb` on `nodes/<subresource>` of `node`. */
export interface NodeAccess {
  readonly user: KubeUser
  readonly verb: string
  readonly node: string
  readonly subresource: string
}

export interface AccessVerdict {
  readonly allowed: boolean
  /** The authorizer's reason (or its evaluation error), "" when it gave none. */
  readonly reason: string
}

const UserInfo = Schema.Struct({
  username: opt(Schema.String),
  uid: opt(Schema.String),
  groups: opt(Schema.Array(Schema.String)),
  extra: opt(Schema.Record(Schema.String, Schema.Array(Schema.String)))
})

const TokenReviewReply = Schema.Struct({
  status: opt(Schema.Struct({
    authenticated: opt(Schema.Boolean),
    user: opt(UserInfo),
    error: opt(Schema.String)
  }))
})

const AccessReviewReply = Schema.Struct({
  status: opt(Schema.Struct({
    allowed: opt(Schema.Boolean),
    denied: opt(Schema.Boolean),
    reason: opt(Schema.String),
    evaluationError: opt(Schema.String)
  }))
})

const decodeTokenReviewReply = Schema.decodeUnknownOption(TokenReviewReply)
const decodeAccessReviewReply = Schema.decodeUnknownOption(AccessReviewReply)

/** The body of `POST /apis/authentication.k8s.io/v1/tokenreviews`: no audiences, so the apiserver's own apply. */
export const tokenReviewBody = (token: string) => ({
  apiVersion: "authentication.k8s.io/v1",
  kind: "TokenReview",
  spec: { token }
})

/** The body of `POST /apis/authorization.k8s.io/v1/subjectaccessreviews` for one node subresource. */
export const accessReviewBody = (access: NodeAccess) => ({
  apiVersion: "authorization.k8s.io/v1",
  kind: "SubjectAccessReview",
  spec: {
    user: access.user.name,
    ...(access.user.uid === "" ? {} : { uid: access.user.uid }),
    groups: [...access.user.groups],
    ...(Object.keys(access.user.extra).length === 0 ? {} : { extra: access.user.extra }),
    resourceAttributes: {
      verb: access.verb,
      group: "",
      version: "v1",
      resource: "nodes",
      subresource: access.subresource,
      name: access.node
    }
  }
})

/**
 * A TokenReview reply → the verdict; None when it is not one. Authenticated needs a user name:
 * an authenticated reply without one names nobody and is taken as a rejection.
 */
export const tokenVerdict = (json: unknown): Option.Option<TokenVerdict> =>
  Option.map(decodeTokenReviewReply(json), ({ status }): TokenVerdict => {
    const user = status?.user
    const name = user?.username ?? ""
    if (status?.authenticated !== true || name === "") {
      return { _tag: "Rejected", reason: status?.error ?? "the token is not valid" }
    }
    return {
      _tag: "Authenticated",
      user: { name, uid: user?.uid ?? "", groups: user?.groups ?? [], extra: user?.extra ?? {} }
    }
  })

/** A SubjectAccessReview reply → the verdict; None when it is not one. Only `allowed: true` allows. */
export const accessVerdict = (json: unknown): Option.Option<AccessVerdict> =>
  Option.map(decodeAccessReviewReply(json), ({ status }) => ({
    allowed: status?.allowed === true && status.denied !== true,
    reason: status?.reason ?? status?.evaluationError ?? ""
  }))
