/**
 * What a kubelet API request asks for, in the apiserver's terms (KAPI-3 — verb and subresource as a
 * kubelet maps them): the verb from its HTTP method and the `nodes/<subresource>` its path falls
 * under, as a kubelet maps them. Pure; the reviews themselves are `Authorize.ts`.
 */

/** The API verb of an HTTP method; undefined for a method that maps to none (HEAD, OPTIONS, …). */
export const nodeVerb = (method: string): string | undefined => {
  switch (method.toUpperCase()) {
    case "GET":
      return "get"
    case "POST":
      return "create"
    case "PUT":
      return "update"
    case "PATCH":
      return "patch"
    case "DELETE":
      return "delete"
    default:
      return undefined
  }
}

/** `path` is `base` or lies under it (`/stats` covers `/stats` and `/stats/summary`, not `/statsx`). */
const under = (path: string, base: string): boolean => path === base || path.startsWith(`${base}/`)

/**
 * The subresources that may each authorize a request to `pathname`, in the order they are asked:
 * the first allowed one lets the request through. A path with a subresource of its own
 * (`pods`, `configz`, `statusz`) falls back to `proxy`, the one that used to cover it, so a
 * client granted `nodes/proxy` keeps its access; `/stats`, `/metrics`, `/logs` and `/checkpoint`
 * have one each and no fallback; every other path is `proxy`. `pathname` is the request's path
 * as the router reads it (the same string: what is authorized is what is served).
 */
export const nodeSubresources = (pathname: string): ReadonlyArray<string> => {
  if (under(pathname, "/stats")) return ["stats"]
  if (under(pathname, "/metrics")) return ["metrics"]
  if (under(pathname, "/logs")) return ["log"]
  if (under(pathname, "/checkpoint")) return ["checkpoint"]
  if (under(pathname, "/pods") || under(pathname, "/runningpods")) return ["pods", "proxy"]
  if (under(pathname, "/configz")) return ["configz", "proxy"]
  if (under(pathname, "/statusz")) return ["statusz", "proxy"]
  return ["proxy"]
}

/** The one path served without authentication or authorization: a liveness check that tells nothing. */
export const isUnauthenticatedPath = (pathname: string): boolean => pathname === "/healthz"
