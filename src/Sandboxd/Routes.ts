/**
 * sandboxd's routes, both ways: the paths the client asks for and what the simulator reads out of
 * a request line, from one table. An id goes into a path escaped (`encodeURIComponent`) and comes
 * back out unescaped, so any id the client can send is the id the server sees.
 */
import { Result } from "effect"
import type { ClaimId } from "../Schemas/Ids.ts"
import { SandboxdHttpError } from "../Services/SandboxdClient.ts"

export type SandboxdRoute = "claim" | "release" | "list" | "get" | "info" | "healthz" | "hibernate" | "wake"

export const CLAIM_PATH = "/v1/claim"
export const LIST_PATH = "/v1/sandboxes"
export const INFO_PATH = "/v1/info"
export const HEALTHZ_PATH = "/healthz"

/** The routes without an id, and the one method each answers. */
const fixed: ReadonlyMap<string, readonly [SandboxdRoute, string]> = new Map([
  [HEALTHZ_PATH, ["healthz", "GET"]],
  [CLAIM_PATH, ["claim", "POST"]],
  [LIST_PATH, ["list", "GET"]],
  [INFO_PATH, ["info", "GET"]]
])
const byId = /^\/v1\/sandboxes\/([^/]+)$/
const verbById = /^\/v1\/sandboxes\/([^/]+)\/(release|hibernate|wake)$/

/** The listing path, asking newer servers to filter by `claim_ref` (older ones ignore it). */
export const listPath = (claimRef: string): string =>
  claimRef === "" ? LIST_PATH : `${LIST_PATH}?claim_ref=${encodeURIComponent(claimRef)}`

/** The `claim_ref` a listing path asks to filter by (`listPath`'s inverse); undefined when none. */
export const claimRefOf = (path: string): string | undefined => {
  const query = path.indexOf("?")
  return query < 0 ? undefined : new URLSearchParams(path.slice(query + 1)).get("claim_ref") ?? undefined
}

/**
 * `/v1/sandboxes/{id}`, path-escaped. An id that is not valid text (a lone UTF-16 surrogate, which
 * JSON can carry) cannot be escaped: a local error, never a thrown URIError.
 */
export const sandboxPath = (operation: string, id: ClaimId): Result.Result<string, SandboxdHttpError> => {
  if (id === "") {
    return Result.fail(new SandboxdHttpError({ operation, status: 0, message: `${operation} requires a sandbox id` }))
  }
  try {
    return Result.succeed(`${LIST_PATH}/${encodeURIComponent(id)}`)
  } catch {
    return Result.fail(
      new SandboxdHttpError({ operation, status: 0, message: `${operation}: the sandbox id is not valid text` })
    )
  }
}

/** The release route for `id`; the same local errors as `sandboxPath`. */
export const releasePath = (id: ClaimId): Result.Result<string, SandboxdHttpError> =>
  Result.map(sandboxPath("release", id), (path) => `${path}/release`)

/** A request line read: the route (`unknown` when none), its id, and whether the method is the route's. */
export interface RoutedRequest {
  readonly route: SandboxdRoute | "unknown"
  readonly id: string
  readonly allowed: boolean
}

const unknownRoute: RoutedRequest = { route: "unknown", id: "", allowed: false }

/** The route a request's method and path (query string and all) ask for. */
export const routeOf = (method: string, rawPath: string): RoutedRequest => {
  const path = rawPath.split("?")[0]!
  const hit = fixed.get(path)
  if (hit !== undefined) return { route: hit[0], id: "", allowed: method === hit[1] }
  const read = byId.exec(path)
  const verb = read === null ? verbById.exec(path) : null
  const escaped = read?.[1] ?? verb?.[1]
  if (escaped === undefined) return unknownRoute
  let id: string
  try {
    id = decodeURIComponent(escaped)
  } catch {
    return unknownRoute
  }
  return verb === null ? { route: "get", id, allowed: method === "GET" } : { route: verb[2] as SandboxdRoute, id, allowed: method === "POST" }
}

/** The `Authorization` header carrying `token`; none for "". */
export const authorizationOf = (token: string): string | undefined => (token === "" ? undefined : `Bearer ${token}`)

/** The bearer token of an `Authorization` header: undefined when it is not `Bearer <token>`. */
export const bearerOf = (authorization: string): string | undefined =>
  authorization.startsWith("Bearer ") && authorization.length > "Bearer ".length ? authorization.slice("Bearer ".length) : undefined
