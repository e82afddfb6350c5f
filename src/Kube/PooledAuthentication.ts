/**
 * The kubeconfig's authentication for every apiserver request, with one connection pool. The
 * headers and TLS material are read from the kubeconfig for every request exactly as client-node
 * reads them (a rotated certificate or token file is picked up), but the dispatcher is kept while
 * the material stays byte for byte the same, where client-node's own builds a new agent, and a new
 * TLS connection, per request. When the material changes, client-node builds the new dispatcher.
 */
import { type KubeConfig, RequestContext, type SecurityAuthentication } from "@kubernetes/client-node"
import type * as Https from "node:https"
import { type Dispatcher, getGlobalDispatcher } from "undici"

/** The parts of the request options that decide the connection, not the request. */
export interface TlsMaterial {
  readonly ca: unknown
  readonly cert: unknown
  readonly key: unknown
  readonly pfx: unknown
  readonly passphrase: unknown
  readonly rejectUnauthorized: unknown
  readonly servername: unknown
}

const materialOf = (options: Https.RequestOptions): TlsMaterial => ({
  ca: options.ca,
  cert: options.cert,
  key: options.key,
  pfx: options.pfx,
  passphrase: options.passphrase,
  rejectUnauthorized: options.rejectUnauthorized,
  servername: options.servername
})

const sameValue = (a: unknown, b: unknown): boolean => {
  if (a === b) return true
  if (Buffer.isBuffer(a) && Buffer.isBuffer(b)) return a.equals(b)
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((item, i) => sameValue(item, b[i]))
  return false
}

/** True when two requests' material would make the same connections. */
export const sameMaterial = (a: TlsMaterial, b: TlsMaterial): boolean =>
  sameValue(a.ca, b.ca) && sameValue(a.cert, b.cert) && sameValue(a.key, b.key) && sameValue(a.pfx, b.pfx) &&
  sameValue(a.passphrase, b.passphrase) && sameValue(a.rejectUnauthorized, b.rejectUnauthorized) &&
  sameValue(a.servername, b.servername)

/** What one request needs from the kubeconfig: its headers, and the pool to send it on. */
export interface Authenticated {
  readonly headers: Readonly<Record<string, string>>
  /** undici's global dispatcher when the kubeconfig asks for no TLS material and no proxy (as fetch would use). */
  readonly dispatcher: Dispatcher
}

export interface PooledAuthentication extends SecurityAuthentication {
  /** The headers and the pooled dispatcher for a request to `url`, read from the kubeconfig now. */
  readonly authenticate: (url: string, method: HttpMethodName) => Promise<Authenticated>
  /** How many dispatchers were built so far (one per distinct TLS material): for tests. */
  readonly dispatchersBuilt: () => number
}

type HttpMethodName = ConstructorParameters<typeof RequestContext>[1]

export const make = (kubeConfig: KubeConfig): PooledAuthentication => {
  let pool: { readonly material: TlsMaterial; readonly dispatcher: Dispatcher | undefined } | undefined
  let built = 0

  const authenticate = async (url: string, method: HttpMethodName): Promise<Authenticated> => {
    const options: Https.RequestOptions = {}
    await kubeConfig.applyToHTTPSOptions(options)
    const headers: Record<string, string> = {}
    for (const [name, value] of Object.entries(options.headers ?? {})) {
      if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(", ") : String(value)
    }
    if (typeof options.auth === "string" && options.auth !== "") {
      headers["Authorization"] = `Basic ${Buffer.from(options.auth).toString("base64")}`
    }
    const material = materialOf(options)
    if (pool === undefined || !sameMaterial(pool.material, material)) {
      // client-node chooses the dispatcher for this material (TLS, proxy, SOCKS): it is asked
      // once, on a request that is never sent, and its choice is kept. The one it replaces is
      // not closed (a request may have been handed it and not be sent yet): its idle
      // connections end on their keep-alive timeout and it goes with them.
      const scratch = new RequestContext(url, method)
      await kubeConfig.applySecurityAuthentication(scratch)
      // Requests that started together may each have asked; one answer is kept.
      if (pool === undefined || !sameMaterial(pool.material, material)) {
        pool = { material, dispatcher: scratch.getDispatcher() }
        built++
      }
    }
    return { headers, dispatcher: pool.dispatcher ?? getGlobalDispatcher() }
  }

  return {
    getName: () => "kubeconfig authentication (one connection pool)",
    authenticate,
    applySecurityAuthentication: async (context) => {
      const { dispatcher, headers } = await authenticate(context.getUrl(), context.getHttpMethod())
      for (const [name, value] of Object.entries(headers)) context.setHeaderParam(name, value)
      context.setDispatcher(dispatcher)
    },
    dispatchersBuilt: () => built
  }
}
