/**
 * The kubelet API's route table (the paths a kubelet serves) as a pure match
 * from method and path to what the server answers. Streaming routes (logs, exec, attach,
 * port-forward) are not implemented here: they answer 501 with a pointer to the sandbox SDK.
 */

export type StreamingFeature = "containerLogs" | "exec" | "attach" | "portForward"

export type KubeletRoute =
  | { readonly _tag: "Healthz" }
  | { readonly _tag: "NotImplemented"; readonly feature: StreamingFeature }
  | { readonly _tag: "StatsSummary" }
  | { readonly _tag: "MetricsResource" }
  | { readonly _tag: "Pods" }
  | { readonly _tag: "NotFound" }
  | { readonly _tag: "MethodNotAllowed"; readonly allow: ReadonlyArray<string> }

const GET_ONLY = ["GET"] as const
const GET_POST = ["GET", "POST"] as const

/** The route a path names, with the methods it accepts; undefined when no route has this shape. */
const lookup = (segments: ReadonlyArray<string>): { route: KubeletRoute; methods: ReadonlyArray<string> } | undefined => {
  const [head, ...rest] = segments
  const allNonEmpty = (n: number) => rest.length === n && rest.every((s) => s !== "")
  // "/x" and "/x/" name the same collection route (the Go router redirects one to the other).
  const bare = rest.length === 0 || (rest.length === 1 && rest[0] === "")
  switch (head) {
    case "healthz":
      return rest.length === 0 ? { route: { _tag: "Healthz" }, methods: GET_ONLY } : undefined
    case "containerLogs":
      return allNonEmpty(3)
        ? { route: { _tag: "NotImplemented", feature: "containerLogs" }, methods: GET_ONLY }
        : undefined
    case "exec":
    case "attach":
      return allNonEmpty(3) ? { route: { _tag: "NotImplemented", feature: head }, methods: GET_POST } : undefined
    case "portForward":
      return allNonEmpty(2)
        ? { route: { _tag: "NotImplemented", feature: "portForward" }, methods: GET_POST }
        : undefined
    case "stats": {
      const summary = rest[0] === "summary" && (rest.length === 1 || (rest.length === 2 && rest[1] === ""))
      return summary ? { route: { _tag: "StatsSummary" }, methods: GET_ONLY } : undefined
    }
    case "metrics": {
      const resource = rest[0] === "resource" && (rest.length === 1 || (rest.length === 2 && rest[1] === ""))
      return resource ? { route: { _tag: "MetricsResource" }, methods: GET_ONLY } : undefined
    }
    case "pods":
    case "runningpods":
      return bare ? { route: { _tag: "Pods" }, methods: GET_ONLY } : undefined
    default:
      return undefined
  }
}

/** `pathname` is the URL path without the query, still percent-encoded. */
export const matchRoute = (method: string, pathname: string): KubeletRoute => {
  if (!pathname.startsWith("/")) return { _tag: "NotFound" }
  const found = lookup(pathname.slice(1).split("/"))
  if (found === undefined) return { _tag: "NotFound" }
  return found.methods.includes(method.toUpperCase())
    ? found.route
    : { _tag: "MethodNotAllowed", allow: found.methods }
}

export const notImplementedBody =
  "501 not implemented: vk-sandbox does not serve container logs, exec, attach or port-forward. " +
  "Sandboxes are reached through the sandbox SDK and their preview URLs.\n"

export const notFoundBody = "404 request not found\n"

/** Prometheus text exposition format; an empty body means "no metric families". */
export const prometheusContentType = "text/plain; version=0.0.4"
