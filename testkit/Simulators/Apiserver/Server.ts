/**
 * The HTTP face of the in-memory apiserver: node:http on loopback, the kube-apiserver URL layout,
 * discovery documents, watch streaming (newline-delimited JSON over a chunked response), fault
 * injection, and a kubeconfig that @kubernetes/client-node 2.x accepts for it.
 *
 * `serve(model, options)` is a scoped Effect: it listens, optionally writes the kubeconfig, and stops
 * the server (ending open watches) when the scope closes. The request handler is plain callback code
 * around the synchronous model; it never throws.
 */
import * as fs from "node:fs/promises"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import { Context, Effect, Layer, Result, Schema, type Scope } from "effect"
import * as YAML from "yaml"
import { ClusterModel, type DeleteOptions, type ModelOptions, type PatchType, type WatchHandle } from "./Model.ts"
import type { ListBody } from "./Paging.ts"
import { isRecord } from "./Patch.ts"
import { apiVersionOf, groupVersions, Namespaces, Pods, type ResourceInfo } from "./Resources.ts"
import { accessReview, tokenReview } from "./Reviews.ts"
import {
  type ApiStatusError,
  badRequest,
  endpointNotFound,
  injected,
  internalError,
  type JsonObject,
  methodNotAllowed,
  notFound,
  unauthorized,
  unsupportedMediaType
} from "./Status.ts"

export class ApiserverStartError extends Schema.TaggedError<ApiserverStartError>()("ApiserverStartError", {
  message: Schema.String
}) {}

export interface ServerOptions {
  /** loopback only: 127.0.0.1 (default) or ::1 */
  readonly host?: string
  /** 0 (default) picks a free port */
  readonly port?: number
  /** bearer token required on every request; no authentication when absent */
  readonly token?: string
  /** where to write a kubeconfig for this server (mode 0600) */
  readonly kubeconfigPath?: string
  /** server-side watch timeout when the client gives none; default 1800 s (the real minimum request timeout) */
  readonly defaultWatchTimeoutSeconds?: number
  /** period of BOOKMARK events on watches that allow them; default 60 s; 0 disables */
  readonly bookmarkIntervalMs?: number
  /**
   * Runs `run` after `ms` (a watch's timeout, a request's latency) and returns its cancel; a real
   * timer by default. A test passes its own to see each wait and end it itself.
   */
  readonly later?: Later
}

export type Later = (run: () => void, ms: number) => () => void

const realLater: Later = (run, ms) => {
  const timer = setTimeout(run, ms)
  return () => clearTimeout(timer)
}

export interface RunningApiserver {
  readonly url: string
  readonly host: string
  readonly port: number
  readonly kubeconfigPath: string | undefined
  readonly model: ClusterModel
  /** Fault: destroy the sockets of every open watch (the client sees a connection reset, not a clean end). */
  readonly resetWatchConnections: () => void
  /** Requests received and held by `faults.latencyMs`, not yet handled (a test's receipt). */
  readonly held: () => number
}

/** The token written into kubeconfigs when the server has none of its own. */
export const defaultToken = "vk-sandbox-sim"

// ------------------------------------------------------------------ routing

type Target =
  | { readonly _tag: "Reply"; readonly code: number; readonly body: unknown }
  | { readonly _tag: "Text"; readonly code: number; readonly text: string }
  | { readonly _tag: "Status"; readonly error: ApiStatusError }
  | {
    readonly _tag: "Resource"
    readonly resource: ResourceInfo
    /** undefined: a namespaced resource addressed across all namespaces */
    readonly namespace: string | undefined
    readonly name: string | undefined
    readonly subresource: string | undefined
    readonly legacyWatch: boolean
  }

const pageNotFound: Target = { _tag: "Text", code: 404, text: "404 page not found\n" }

const groupDoc = (model: ClusterModel, group: string) => {
  const versions = groupVersions(model.resources)
    .filter((gv) => gv.group === group)
    .map((gv) => ({ groupVersion: `${gv.group}/${gv.version}`, version: gv.version }))
  return { name: group, versions, preferredVersion: versions[0] }
}

const resourceList = (model: ClusterModel, group: string, version: string) => {
  const resources: Array<JsonObject> = []
  for (const r of model.resources.filter((x) => x.group === group && x.version === version)) {
    resources.push({
      name: r.plural,
      singularName: r.singular,
      namespaced: r.namespaced,
      kind: r.kind,
      verbs: r.verbs,
      ...(r.shortNames.length > 0 ? { shortNames: r.shortNames } : {})
    })
    for (const sub of r.subresources) {
      resources.push({ name: `${r.plural}/${sub}`, singularName: "", namespaced: r.namespaced, kind: r.kind, verbs: ["get", "patch", "update"] })
    }
    if (r === Pods) resources.push({ name: "pods/binding", singularName: "", namespaced: true, kind: "Binding", verbs: ["create"] })
  }
  return group === ""
    ? { kind: "APIResourceList", groupVersion: version, resources }
    : { kind: "APIResourceList", apiVersion: "v1", groupVersion: `${group}/${version}`, resources }
}

const route = (model: ClusterModel, segments: ReadonlyArray<string>, hostPort: string): Target => {
  const [head, ...tail] = segments
  if (segments.length === 0) {
    return { _tag: "Reply", code: 200, body: { paths: ["/api", "/api/v1", "/apis", "/healthz", "/livez", "/readyz", "/version"] } }
  }
  if (segments.length === 1 && (head === "healthz" || head === "livez" || head === "readyz")) return { _tag: "Text", code: 200, text: "ok" }
  if (segments.length === 1 && head === "version") {
    return {
      _tag: "Reply",
      code: 200,
      body: { major: "1", minor: "35", gitVersion: "v1.35.0-vk-sandbox-sim", platform: "linux/amd64", goVersion: "go1.25", compiler: "gc" }
    }
  }
  if (head === "api") {
    if (tail.length === 0) {
      return {
        _tag: "Reply",
        code: 200,
        body: { kind: "APIVersions", versions: ["v1"], serverAddressByClientCIDRs: [{ clientCIDR: "0.0.0.0/0", serverAddress: hostPort }] }
      }
    }
    if (tail[0] !== "v1") return pageNotFound
    return routeGroupVersion(model, "", "v1", tail.slice(1))
  }
  if (head === "apis") {
    if (tail.length === 0) {
      const groups = [...new Set(model.resources.filter((r) => r.group !== "").map((r) => r.group))].map((g) => groupDoc(model, g))
      return { _tag: "Reply", code: 200, body: { kind: "APIGroupList", apiVersion: "v1", groups } }
    }
    const group = tail[0]
    if (!model.resources.some((r) => r.group === group)) return pageNotFound // unknown group: the mux's plain 404
    if (tail.length === 1) return { _tag: "Reply", code: 200, body: { kind: "APIGroup", apiVersion: "v1", ...groupDoc(model, group) } }
    const version = tail[1]
    if (!model.resources.some((r) => r.group === group && r.version === version)) return pageNotFound
    return routeGroupVersion(model, group, version, tail.slice(2))
  }
  return pageNotFound
}

const routeGroupVersion = (model: ClusterModel, group: string, version: string, restIn: ReadonlyArray<string>): Target => {
  if (restIn.length === 0) return { _tag: "Reply", code: 200, body: resourceList(model, group, version) }
  const legacyWatch = restIn[0] === "watch"
  const rest = legacyWatch ? restIn.slice(1) : restIn
  const find = (plural: string) => model.resourceFor(group, version, plural)
  // Built-in groups answer an unknown resource from their REST container: a Status with empty details.
  // A custom-resource group hands an unknown resource on to the apiserver's not-found handler: plain text.
  const customGroup = model.resources.some((r) => r.group === group && r.customResource)
  const notFoundHere: Target = customGroup ? pageNotFound : { _tag: "Status", error: endpointNotFound() }
  const target = (resource: ResourceInfo, namespace: string | undefined, name: string | undefined, sub: string | undefined): Target => {
    const known = resource.subresources.includes(sub as "status") || (resource === Pods && sub === "binding")
    if (sub !== undefined && !known) {
      // the custom resource handler answers an unknown subresource with the object-level NotFound
      return resource.customResource && name !== undefined ? { _tag: "Status", error: notFound(resource, name) } : notFoundHere
    }
    return { _tag: "Resource", resource, namespace, name, subresource: sub, legacyWatch }
  }
  // /namespaces/{ns}/{plural}[/{name}[/{sub}]]
  if (group === "" && rest[0] === "namespaces" && rest.length >= 3 && !(rest.length === 3 && (rest[2] === "status" || rest[2] === "finalize"))) {
    const r = find(rest[2])
    if (r === undefined || !r.namespaced || rest.length > 5) return notFoundHere
    return target(r, rest[1], rest[3], rest[4])
  }
  if (group !== "" && rest[0] === "namespaces" && rest.length >= 3) {
    const r = find(rest[2])
    if (r === undefined || !r.namespaced || rest.length > 5) return notFoundHere
    return target(r, rest[1], rest[3], rest[4])
  }
  // /{plural}[/{name}[/{sub}]]
  const r = find(rest[0])
  if (r === undefined || rest.length > 3) return notFoundHere
  if (r.namespaced) {
    if (rest.length > 1) return notFoundHere
    return target(r, undefined, undefined, undefined)
  }
  if (r === Namespaces && rest[2] === "finalize") return { _tag: "Resource", resource: r, namespace: "", name: rest[1], subresource: "finalize", legacyWatch }
  return target(r, "", rest[1], rest[2])
}

// ------------------------------------------------------------------ body decoding

const parseJson = (text: string): Result.Result<unknown, string> => {
  try {
    return Result.succeed(JSON.parse(text) as unknown)
  } catch (e) {
    return Result.fail(e instanceof Error ? e.message : String(e))
  }
}

const parseYaml = (text: string): Result.Result<unknown, string> => {
  const doc = YAML.parseDocument(text)
  if (doc.errors.length > 0) return Result.fail(doc.errors[0].message)
  return Result.succeed(doc.toJS() as unknown)
}

const patchTypeOf = (contentType: string): PatchType | undefined => {
  const base = contentType.split(";")[0].trim().toLowerCase()
  switch (base) {
    case "application/strategic-merge-patch+json":
      return "strategic"
    case "application/merge-patch+json":
      return "merge"
    case "application/json-patch+json":
      return "json"
    case "application/apply-patch+yaml":
      return "apply"
    default:
      return undefined
  }
}

/** Go's strconv.ParseBool, which the server uses for query flags (watch, allowWatchBookmarks, force). */
const boolParam = (v: string | null): boolean | undefined =>
  v === null ? undefined : ["1", "t", "T", "TRUE", "true", "True"].includes(v)

// ------------------------------------------------------------------ the handler

interface Ctx {
  readonly model: ClusterModel
  readonly options: ServerOptions
  readonly hostPort: () => string
  readonly watches: Set<http.ServerResponse>
  readonly later: Later
}

const sendJson = (res: http.ServerResponse, code: number, body: unknown) => sendJsonText(res, code, JSON.stringify(body))

/**
 * kube-apiserver's replies go out through Go's net/http, which holds the first 2048 bytes of a body:
 * a body that fits is sent with a Content-Length, a longer one chunked, without a Content-Length.
 * test/k8s/Differential.test.ts holds both servers to it. (Go's chunks are 2048 bytes; here a
 * chunk is what one write hands over, which HTTP leaves to the sender.)
 */
const contentLengthUpTo = 2048

const jsonHeaders = { "Content-Type": "application/json", "Cache-Control": "no-cache, private" }

const sendJsonText = (res: http.ServerResponse, code: number, text: string) => sendJsonBytes(res, code, Buffer.from(text))

const sendJsonBytes = (res: http.ServerResponse, code: number, bytes: Buffer) => {
  if (bytes.length <= contentLengthUpTo) {
    res.writeHead(code, { ...jsonHeaders, "Content-Length": bytes.length })
    res.end(bytes)
    return
  }
  res.writeHead(code, jsonHeaders)
  res.write(bytes)
  res.end()
}

/** How many bytes of items a list writes at a time before it yields to the event loop. */
const listPieceBytes = 64 * 1024
const comma = Buffer.from(",")

/** The whole body when it is at most `contentLengthUpTo` bytes (sent with a Content-Length). */
const smallBody = (body: ListBody): Buffer | undefined => {
  const parts: Array<Buffer> = [Buffer.from(body.head)]
  let size = parts[0].length + Buffer.byteLength(body.tail)
  for (const [i, o] of body.items.entries()) {
    if (i > 0) parts.push(comma)
    const item = body.itemBytes(o)
    parts.push(item)
    size += item.length + (i > 0 ? 1 : 0)
    if (size > contentLengthUpTo) return undefined
  }
  if (size > contentLengthUpTo) return undefined
  parts.push(Buffer.from(body.tail))
  return Buffer.concat(parts)
}

/**
 * A list reply, streamed as kube-apiserver streams it (its JSON list encoding writes each item as it
 * encodes it, so a large list goes out chunked while it is being written): the envelope, then the
 * items about 64 KB at a time, yielding to the event loop in between (or, when the client
 * has not taken what was sent, waiting until it has), so the server answers other requests
 * meanwhile, as the real one does. The items are the state when the list was asked for
 * (`ListBody`). A failure once the head is sent cannot change the status any more: like the real
 * server, which then writes the error's Status after what it has sent and ends the reply, the reply
 * ends with a 500's Status.
 */
const sendList = (res: http.ServerResponse, body: ListBody) => {
  let next = 0
  let done = false
  let closed = false
  res.on("close", () => {
    closed = true
  })
  /**
   * Writes the next piece (items until about `listPieceBytes`, the tail after the last) with one
   * `write`, so it goes out as one HTTP chunk: each `write` of a reply is a chunk of its own, and an
   * item and its comma written apart would reach the client as two chunks per Pod, a framing neither
   * the real server (2048-byte chunks, items cut anywhere) nor a gzipped reply has.
   */
  const writePiece = (prefix: string): boolean => {
    const parts: Array<Buffer> = []
    let size = 0
    if (prefix !== "") {
      const head = Buffer.from(prefix)
      parts.push(head)
      size += head.length
    }
    while (next < body.items.length && size < listPieceBytes) {
      if (next > 0) {
        parts.push(comma)
        size += comma.length
      }
      const item = body.itemBytes(body.items[next])
      parts.push(item)
      size += item.length
      next += 1
    }
    if (next === body.items.length) {
      const tail = Buffer.from(body.tail)
      parts.push(tail)
      size += tail.length
      done = true
    }
    res.write(Buffer.concat(parts, size))
    // what counts is the socket's buffer (a write it finished at once still drains a tick later)
    return !(res.socket?.writableNeedDrain ?? false)
  }
  const failed = (e: unknown) => {
    const status = internalError(e instanceof Error ? e.message : String(e))
    if (!res.headersSent) return sendStatus(res, status)
    res.end(JSON.stringify(status.body))
  }
  const afterWrite = (flowing: boolean) => {
    if (done) res.end()
    else if (flowing) setImmediate(step)
    // a write the socket finished at once drains on the next tick: yield to the event loop even then
    else res.socket?.once("drain", () => setImmediate(step))
  }
  const step = () => {
    if (closed) return
    try {
      afterWrite(writePiece(""))
    } catch (e) {
      failed(e)
    }
  }
  try {
    const small = smallBody(body)
    if (small !== undefined) return sendJsonBytes(res, 200, small)
    res.writeHead(200, jsonHeaders)
    afterWrite(writePiece(body.head))
  } catch (e) {
    failed(e)
  }
}

const sendStatus = (res: http.ServerResponse, error: ApiStatusError) => {
  if (error.code === 429 || error.code === 503) res.setHeader("Retry-After", "1")
  sendJson(res, error.code, error.body)
}

const safeDecode = (segment: string): string => {
  try {
    return decodeURIComponent(segment)
  } catch {
    return segment
  }
}

/** The request handler; a defect in it answers 500 instead of taking the process down. */
const handleSafely = (ctx: Ctx, req: http.IncomingMessage, res: http.ServerResponse, rawBody: string): void => {
  try {
    handle(ctx, req, res, rawBody)
  } catch (e) {
    if (!res.headersSent) sendStatus(res, internalError(e instanceof Error ? e.message : String(e)))
    else res.destroy()
  }
}

const handle = (ctx: Ctx, req: http.IncomingMessage, res: http.ServerResponse, rawBody: string): void => {
  const { model } = ctx
  const url = new URL(req.url ?? "/", "http://sim.invalid")
  const method = (req.method ?? "GET").toUpperCase()
  if (ctx.options.token !== undefined) {
    const auth = req.headers.authorization ?? ""
    if (auth !== `Bearer ${ctx.options.token}`) return sendStatus(res, unauthorized())
  }
  const rule = model.faults.failures.find((f) =>
    (f.method === undefined || f.method.toUpperCase() === method) &&
    (typeof f.path === "string" ? url.pathname.startsWith(f.path) : f.path.test(url.pathname)) &&
    (f.times === undefined || f.times > 0)
  )
  if (rule !== undefined) {
    if (rule.times !== undefined) rule.times -= 1
    return sendStatus(res, injected(rule.code, "injected fault"))
  }
  if (url.pathname === tokenReviewsPath || url.pathname === accessReviewsPath) return handleReview(ctx, res, url.pathname, method, rawBody)
  const segments = url.pathname.split("/").filter((s) => s !== "").map(safeDecode)
  const target = route(model, segments, ctx.hostPort())
  switch (target._tag) {
    case "Text":
      res.writeHead(target.code, { "Content-Type": "text/plain; charset=utf-8", "X-Content-Type-Options": "nosniff" })
      return void res.end(target.text)
    case "Reply":
      return method === "GET" ? sendJson(res, target.code, target.body) : sendStatus(res, methodNotAllowed())
    case "Status":
      return sendStatus(res, target.error)
    case "Resource":
      return handleResource(ctx, req, res, url, method, target, rawBody)
  }
}

const tokenReviewsPath = "/apis/authentication.k8s.io/v1/tokenreviews"
const accessReviewsPath = "/apis/authorization.k8s.io/v1/subjectaccessreviews"

/** A review is created and answered, never stored (`Reviews.ts`). */
const handleReview = (ctx: Ctx, res: http.ServerResponse, path: string, method: string, rawBody: string): void => {
  if (method !== "POST") return sendStatus(res, methodNotAllowed())
  const body = parseJson(rawBody)
  if (Result.isFailure(body)) return sendStatus(res, badRequest(`couldn't get version/kind; json parse error: ${body.failure}`))
  const answer = path === tokenReviewsPath ? tokenReview(body.success, ctx.options.token ?? defaultToken) : accessReview(body.success)
  return Result.isFailure(answer) ? sendStatus(res, answer.failure) : sendJson(res, 201, answer.success)
}

const handleResource = (
  ctx: Ctx,
  req: http.IncomingMessage,
  res: http.ServerResponse,
  url: URL,
  method: string,
  t: Extract<Target, { _tag: "Resource" }>,
  rawBody: string
): void => {
  const { model } = ctx
  const r = t.resource
  const q = url.searchParams
  const ns = t.namespace ?? ""
  const fieldManager = q.get("fieldManager") ?? userAgentManager(req.headers["user-agent"])
  const decodeBody = (): Result.Result<unknown, ApiStatusError> => {
    // the server decodes JSON, and YAML when the request says so (application/yaml)
    const yaml = (req.headers["content-type"] ?? "").toLowerCase().includes("yaml")
    const parsed = yaml ? parseYaml(rawBody) : parseJson(rawBody)
    return Result.isFailure(parsed)
      ? Result.fail(badRequest(`couldn't get version/kind; json parse error: ${parsed.failure}`))
      : Result.succeed(parsed.success)
  }
  const reply = (code: number, out: Result.Result<unknown, ApiStatusError>) =>
    Result.isFailure(out) ? sendStatus(res, out.failure) : sendJson(res, code, out.success)

  if (t.name === undefined) {
    if (method === "GET") {
      const watch = t.legacyWatch || boolParam(q.get("watch")) === true
      const listOptions = { labelSelector: q.get("labelSelector") ?? undefined, fieldSelector: q.get("fieldSelector") ?? undefined }
      if (watch) return startWatch(ctx, req, res, r, t.namespace, q, listOptions)
      const limitText = q.get("limit")
      const listed = model.listBody(r, t.namespace, {
        ...listOptions,
        limit: limitText !== null && /^\d+$/.test(limitText) ? Number(limitText) : undefined,
        continue: q.get("continue") ?? undefined,
        resourceVersion: q.get("resourceVersion") ?? undefined
      })
      return Result.isFailure(listed) ? sendStatus(res, listed.failure) : sendList(res, listed.success)
    }
    if (method === "POST" && (t.namespace !== undefined || !r.namespaced)) {
      const body = decodeBody()
      if (Result.isFailure(body)) return sendStatus(res, body.failure)
      return reply(201, model.create(r, ns, body.success, { fieldManager }))
    }
    if (method === "DELETE" && (t.namespace !== undefined || !r.namespaced) && r !== Namespaces) {
      const options = deleteOptionsOf(rawBody, q)
      if (Result.isFailure(options)) return sendStatus(res, options.failure)
      return reply(200, model.deleteCollection(r, t.namespace, {
        labelSelector: q.get("labelSelector") ?? undefined,
        fieldSelector: q.get("fieldSelector") ?? undefined
      }, options.success))
    }
    return sendStatus(res, methodNotAllowed())
  }
  const name = t.name
  if (t.subresource === "finalize") {
    // the namespace controller's last step, here on demand
    if (method !== "PUT") return sendStatus(res, methodNotAllowed())
    model.finalizeNamespace(name)
    return sendJson(res, 200, { kind: "Namespace", apiVersion: "v1", metadata: { name } })
  }
  if (t.subresource === "binding") {
    if (method !== "POST") return sendStatus(res, methodNotAllowed())
    const body = decodeBody()
    if (Result.isFailure(body)) return sendStatus(res, body.failure)
    const target = isRecord(body.success) && isRecord(body.success["target"]) ? body.success["target"]["name"] : undefined
    if (typeof target !== "string" || target === "") return sendStatus(res, badRequest("target.name: Required value"))
    return reply(201, model.bind(ns, name, target))
  }
  switch (method) {
    case "GET":
      return reply(200, model.get(r, ns, name))
    case "PUT": {
      const body = decodeBody()
      if (Result.isFailure(body)) return sendStatus(res, body.failure)
      const existed = model.peek(r, ns, name) !== undefined // a PUT that creates (leases, events) answers 201
      return reply(
        existed ? 200 : 201,
        t.subresource === "status" ? model.updateStatus(r, ns, name, body.success, { fieldManager }) : model.update(r, ns, name, body.success, { fieldManager })
      )
    }
    case "PATCH": {
      const patchType = patchTypeOf(req.headers["content-type"] ?? "")
      if (patchType === undefined) return sendStatus(res, unsupportedMediaType())
      const parsed = patchType === "apply" ? parseYaml(rawBody) : parseJson(rawBody)
      if (Result.isFailure(parsed)) return sendStatus(res, badRequest(`error decoding patch: ${parsed.failure}`))
      const force = boolParam(q.get("force"))
      const out = model.patch(r, ns, name, patchType, parsed.success, {
        subresource: t.subresource === "status" ? "status" : undefined,
        fieldManager: patchType === "apply" ? q.get("fieldManager") ?? undefined : fieldManager,
        force
      })
      if (Result.isFailure(out)) return sendStatus(res, out.failure)
      return sendJson(res, out.success.created ? 201 : 200, out.success.object)
    }
    case "DELETE": {
      const options = deleteOptionsOf(rawBody, q)
      if (Result.isFailure(options)) return sendStatus(res, options.failure)
      const out = model.delete(r, ns, name, options.success)
      if (Result.isFailure(out)) return sendStatus(res, out.failure)
      return sendJson(res, 200, out.success._tag === "Deleted" ? out.success.body : out.success.object)
    }
    default:
      return sendStatus(res, methodNotAllowed())
  }
}

/** DeleteOptions from the body (v1 DeleteOptions) or, failing that, the gracePeriodSeconds query parameter. */
const deleteOptionsOf = (rawBody: string, q: URLSearchParams): Result.Result<DeleteOptions, ApiStatusError> => {
  let options: DeleteOptions = {}
  if (rawBody.trim() !== "") {
    const parsed = parseJson(rawBody)
    if (Result.isFailure(parsed)) return Result.fail(badRequest(`couldn't get version/kind; json parse error: ${parsed.failure}`))
    if (isRecord(parsed.success)) {
      const b = parsed.success
      const pre = isRecord(b["preconditions"]) ? b["preconditions"] : undefined
      options = {
        gracePeriodSeconds: typeof b["gracePeriodSeconds"] === "number" ? b["gracePeriodSeconds"] : undefined,
        preconditions: pre === undefined ? undefined : {
          uid: typeof pre["uid"] === "string" ? pre["uid"] : undefined,
          resourceVersion: typeof pre["resourceVersion"] === "string" ? pre["resourceVersion"] : undefined
        }
      }
    }
  }
  const graceQuery = q.get("gracePeriodSeconds")
  if (options.gracePeriodSeconds === undefined && graceQuery !== null && /^-?\d+$/.test(graceQuery)) {
    options = { ...options, gracePeriodSeconds: Number(graceQuery) }
  }
  return Result.succeed(options)
}

/** The server's default field manager: the User-Agent up to the first "/". */
const userAgentManager = (ua: string | undefined): string | undefined => {
  if (ua === undefined || ua === "") return undefined
  return ua.split("/")[0].slice(0, 128)
}

const startWatch = (
  ctx: Ctx,
  req: http.IncomingMessage,
  res: http.ServerResponse,
  r: ResourceInfo,
  namespace: string | undefined,
  q: URLSearchParams,
  listOptions: { labelSelector: string | undefined; fieldSelector: string | undefined }
): void => {
  const { model } = ctx
  const stalled = model.faults.stallWatches
  let ended = false
  let started = false
  let cancelTimer: (() => void) | undefined
  let handle: WatchHandle | undefined
  const buffered: Array<string> = []
  const finish = () => {
    if (ended) return
    ended = true
    cancelTimer?.()
    handle?.close()
    ctx.watches.delete(res)
    if (!started) {
      res.writeHead(200, { "Content-Type": "application/json", "Cache-Control": "no-cache, private" })
    }
    res.end()
  }
  const outcome = model.watch(r, namespace, {
    ...listOptions,
    resourceVersion: q.get("resourceVersion") ?? undefined,
    allowWatchBookmarks: boolParam(q.get("allowWatchBookmarks")) === true,
    sendInitialEvents: boolParam(q.get("sendInitialEvents")) === true
  }, {
    onEvent: (event) => {
      const line = `${JSON.stringify({ type: event.type, object: event.object })}\n`
      if (!started) buffered.push(line)
      else if (!ended) res.write(line)
    },
    onClose: () => {
      if (!started) buffered.push("")
      else finish()
    }
  })
  if (Result.isFailure(outcome)) return sendStatus(res, outcome.failure)
  handle = outcome.success
  started = true
  ctx.watches.add(res)
  res.writeHead(200, { "Content-Type": "application/json", "Cache-Control": "no-cache, private", "Transfer-Encoding": "chunked" })
  res.flushHeaders()
  for (const line of buffered) {
    if (line === "") return finish()
    res.write(line)
  }
  res.on("close", () => {
    if (!ended) {
      ended = true
      cancelTimer?.()
      handle?.close()
      ctx.watches.delete(res)
    }
  })
  if (stalled) return // a stalled watch: no events, and the server never ends it
  const timeoutText = q.get("timeoutSeconds")
  // 0 or absent: the server's own timeout (the real one picks 1–2× --min-request-timeout)
  const timeoutSeconds = timeoutText !== null && /^\d+$/.test(timeoutText) && Number(timeoutText) > 0
    ? Number(timeoutText)
    : ctx.options.defaultWatchTimeoutSeconds ?? 1800
  cancelTimer = ctx.later(finish, timeoutSeconds * 1000)
  // No bookmark ahead of the deadline: kube-apiserver v1.37.2 ends a quiet 4 s watch with bookmarks
  // allowed without sending one. Bookmarks come from the periodic timer (bookmarkIntervalMs) only.
  void req
}

// ------------------------------------------------------------------ kubeconfig

/**
 * A one-cluster, one-user kubeconfig with a bearer token: the one writer of kubeconfigs for the
 * simulators, the tests and the real control plane. By default for plain http on loopback:
 * client-node 2.x refuses an http:// server unless the cluster entry skips TLS verification ("HTTP
 * protocol is not allowed when skipTLSVerify is not set or false"); `cluster` replaces that (a CA).
 */
export const kubeconfigYaml = (
  url: string,
  token: string,
  options: { readonly cluster?: Readonly<Record<string, unknown>>; readonly user?: string } = {}
): string => {
  const user = options.user ?? "vk-sandbox-sim"
  return YAML.stringify({
    apiVersion: "v1",
    kind: "Config",
    clusters: [{ name: "vk-sandbox-sim", cluster: { server: url, ...(options.cluster ?? { "insecure-skip-tls-verify": true }) } }],
    users: [{ name: user, user: { token } }],
    contexts: [{ name: user, context: { cluster: "vk-sandbox-sim", user } }],
    "current-context": user,
    preferences: {}
  })
}

export const writeKubeconfig = (path: string, url: string, token: string): Effect.Effect<void, ApiserverStartError> =>
  Effect.tryPromise({
    try: () => fs.writeFile(path, kubeconfigYaml(url, token), { mode: 0o600 }),
    catch: (cause) => new ApiserverStartError({ message: `cannot write kubeconfig ${path}: ${String(cause)}` })
  })

// ------------------------------------------------------------------ lifecycle

const loopback = new Set(["127.0.0.1", "::1", "localhost"])

/** Listen on loopback, serve the model, and stop (ending every watch) when the scope closes. */
export const serve = (
  model: ClusterModel,
  options: ServerOptions = {}
): Effect.Effect<RunningApiserver, ApiserverStartError, Scope.Scope> =>
  Effect.gen(function*() {
    const host = options.host ?? "127.0.0.1"
    if (!loopback.has(host)) return yield* new ApiserverStartError({ message: `refusing to listen on ${host}: loopback only` })
    const watches = new Set<http.ServerResponse>()
    let hostPort = ""
    const later = options.later ?? realLater
    const ctx: Ctx = { model, options, hostPort: () => hostPort, watches, later }
    let held = 0
    const server = http.createServer((req, res) => {
      const chunks: Array<Buffer> = []
      req.on("data", (c: Buffer) => chunks.push(c))
      req.on("end", () => {
        const body = Buffer.concat(chunks).toString("utf8")
        const latency = model.faults.latencyMs
        if (latency <= 0) return handleSafely(ctx, req, res, body)
        held++
        later(() => {
          held--
          handleSafely(ctx, req, res, body)
        }, latency)
      })
    })
    const bookmarkEvery = options.bookmarkIntervalMs ?? 60_000
    const port = yield* Effect.acquireRelease(
      Effect.callback<number, ApiserverStartError>((resume) => {
        server.once("error", (e) => resume(Effect.fail(new ApiserverStartError({ message: `listen ${host}:${options.port ?? 0}: ${e.message}` }))))
        server.listen(options.port ?? 0, host, () => resume(Effect.succeed((server.address() as AddressInfo).port)))
      }),
      () =>
        Effect.callback<void>((resume) => {
          for (const w of watches) w.end()
          watches.clear()
          server.close(() => resume(Effect.void))
          server.closeAllConnections()
        })
    )
    if (bookmarkEvery > 0) {
      yield* Effect.acquireRelease(
        Effect.sync(() => setInterval(() => model.bookmark(), bookmarkEvery)),
        (t) => Effect.sync(() => clearInterval(t))
      )
    }
    const shownHost = host.includes(":") ? `[${host}]` : host
    hostPort = `${shownHost}:${port}`
    const url = `http://${hostPort}`
    if (options.kubeconfigPath !== undefined) {
      yield* writeKubeconfig(options.kubeconfigPath, url, options.token ?? defaultToken)
    }
    const resetWatchConnections = () => {
      for (const w of [...watches]) w.destroy()
      watches.clear()
    }
    return { url, host, port, kubeconfigPath: options.kubeconfigPath, model, resetWatchConnections, held: () => held }
  })

/**
 * The running simulator as a service, for test layers: `ApiserverSim.layer({ token, kubeconfigPath })`
 * starts a fresh model (or the given one) on loopback for the layer's lifetime.
 */
export class ApiserverSim extends Context.Service<ApiserverSim, RunningApiserver>()("vk-sandbox/ApiserverSim") {
  static readonly layer = (
    options: ServerOptions & { readonly model?: ClusterModel; readonly modelOptions?: ModelOptions } = {}
  ): Layer.Layer<ApiserverSim, ApiserverStartError> =>
    Layer.effect(ApiserverSim, serve(options.model ?? new ClusterModel(options.modelOptions), options))
}

export { apiVersionOf }
