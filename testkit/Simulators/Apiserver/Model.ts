/**
 * In-memory Kubernetes API server model: the state machine behind the HTTP face (`Server.ts`) and the
 * in-memory KubeApi test layer. Plain synchronous TypeScript over JSON objects; every operation returns
 * `Result<A, ApiStatusError>` (use `Effect.fromResult` in Effect code), where the error carries the exact
 * `Status` body and HTTP code the real kube-apiserver would answer with.
 *
 * API (resources are the `ResourceInfo` constants from `Resources.ts`; `ns` is "" for cluster scope):
 *   create(r, ns, obj, {fieldManager})                     POST
 *   get(r, ns, name)                                       GET
 *   list(r, ns | undefined, {labelSelector, fieldSelector, limit, continue})  GET collection (undefined
 *       ns: all namespaces)
 *   watch(r, ns | undefined, {resourceVersion, allowWatchBookmarks, sendInitialEvents, labelSelector,
 *       fieldSelector}, sink) → WatchHandle. Replayed/initial events are delivered synchronously inside the
 *       call; later events synchronously inside the write that caused them.
 *   update(r, ns, name, obj) / updateStatus(r, ns, name, obj)     PUT (main resource / status subresource)
 *   patch(r, ns, name, patchType, patch, {subresource, fieldManager, force})  PATCH: "strategic" | "merge"
 *       | "json" | "apply" (server-side apply; fieldManager required)
 *   delete(r, ns, name, {gracePeriodSeconds, preconditions: {uid, resourceVersion}})
 *   deleteCollection(r, ns, selectors, deleteOptions), bind(ns, name, nodeName) (pods/binding)
 *   Namespaces are the `Namespaces` resource; `finalizeNamespace(name)` plays the namespace controller.
 * Test helpers: `faults` (latency, 5xx rules, stalled watches: read by the HTTP face too), `deny(rule)`
 *   (403 Forbidden like RBAC), `bookmark()`, `expireWatches()` (ERROR 410 on every open watch),
 *   `dropWatches()`, `compact()`, `peek(r, ns, name)` / `put(r, obj)` / `remove(r, ns, name)` (direct
 *   access, no semantics), `collectGarbage()` (the GC controller, on demand), `resourceVersion` (the
 *   global counter), `openWatches()`.
 *
 * Modelled as the real server does it (sources in the comments at each place; Status bodies, PUT without
 * resourceVersion, pod IP checks, preconditions, SSA wording and watch starts were compared with raw
 * requests to kube-apiserver v1.37.2 from test/k8s):
 * - request order: authorization, decoding (400), admission (NamespaceLifecycle 404/403), validation
 *   (422), storage (uid precondition, then resourceVersion 409; AlreadyExists 409);
 * - PUT without resourceVersion: allowed for pods, nodes, events, namespaces; 422 for leases and custom
 *   resources; a PUT of a missing lease or event creates it, unless the body carries a
 *   uid (a storage precondition the missing object fails: 409);
 * - a no-op write keeps the resourceVersion and sends no watch event;
 * - every pod DELETE first writes deletionTimestamp/deletionGracePeriodSeconds (MODIFIED), then, at
 *   grace 0 with no finalizer left, removes the pod (DELETED) — the graceful-delete strategy;
 * - a watch from an expired resourceVersion gets one ERROR event (410 Expired) on a 200 response; one
 *   from a future resourceVersion stays open and silent until the counter passes it; an object leaving
 *   a watch's selector is a DELETED event for that watch;
 * - lists are atomic for server-side apply (the CRDs here declare no list types);
 * - pagination with limit/continue (later pages come from the current state, not a snapshot at the
 *   token's resourceVersion; a token older than the retained window is 410 Expired).
 * Not modelled: the not-ready taint TaintNodesByCondition adds to new nodes (opt in: nodeNotReadyTaint),
 * managedFields detail (no "." or "k:" entries: lists are leaves), dryRun, propagationPolicy,
 * structural-schema pruning of custom resources, and events.k8s.io/v1 as a view of core/v1 events
 * (here they are two separate stores).
 *
 * Time: creationTimestamp, deletionTimestamp and managedFields times come from the injected `now`.
 */
import { Result } from "effect"
import {
  deletePath,
  fromFieldsV1,
  fromKey,
  getPath,
  leafPaths,
  pathKey,
  sameValue,
  setPath,
  toFieldsV1
} from "./Fields.ts"
import { clone, isRecord, jsonMergePatch, jsonPatch, strategicMerge } from "./Patch.ts"
import {
  AllResources,
  apiVersionOf,
  CoreEvents,
  EventsV1,
  findResource,
  Namespaces,
  NodeInventories,
  Nodes,
  Pods,
  registryKey,
  type ResourceInfo
} from "./Resources.ts"
import {
  type FieldSelector,
  type LabelSelector,
  matchFields,
  matchLabels,
  parseFieldSelector,
  parseLabelSelector
} from "./Selectors.ts"
import {
  alreadyExists,
  type ApiStatusError,
  badRequest,
  conflict,
  expired,
  failure,
  type FieldError,
  plainServerError,
  invalid,
  type JsonObject,
  namespaceTerminating,
  notFound,
  rbacForbidden,
  staleConflict,
  type StatusBody,
  success,
  uidPreconditionConflict
} from "./Status.ts"

export type Outcome<A> = Result.Result<A, ApiStatusError>

/** What `ClusterModel.snapshot` takes and `restore` puts back. */
export interface ModelSnapshot {
  readonly store: ReadonlyMap<string, ReadonlyMap<string, JsonObject>>
  readonly rv: number
}

export type WatchEventType = "ADDED" | "MODIFIED" | "DELETED" | "BOOKMARK" | "ERROR"

export interface WatchEvent {
  readonly type: WatchEventType
  readonly object: JsonObject
}

export interface WatchSink {
  readonly onEvent: (event: WatchEvent) => void
  /** The server ended the watch (timeout, drop, 410). Not called after the caller's own `close()`. */
  readonly onClose: () => void
}

export interface WatchHandle {
  readonly close: () => void
  readonly isOpen: () => boolean
  /** Send this watch a BOOKMARK now (if it asked for bookmarks). */
  readonly bookmark: () => void
}

export interface ListOptions {
  readonly labelSelector?: string | undefined
  readonly fieldSelector?: string | undefined
}

export interface PageOptions {
  /** at most this many items; the rest through `continue` */
  readonly limit?: number | undefined
  readonly continue?: string | undefined
  /** a list at least this recent; one newer than the server has is 504 Too large resource version */
  readonly resourceVersion?: string | undefined
}

export interface WatchOptions extends ListOptions {
  readonly resourceVersion?: string | undefined
  readonly allowWatchBookmarks?: boolean | undefined
  /** watch-list: the current state as ADDED events, then a BOOKMARK annotated k8s.io/initial-events-end */
  readonly sendInitialEvents?: boolean | undefined
}

export interface WriteOptions {
  readonly fieldManager?: string | undefined
}

export interface DeleteOptions {
  readonly gracePeriodSeconds?: number | undefined
  readonly preconditions?: { readonly uid?: string | undefined; readonly resourceVersion?: string | undefined } | undefined
}

export type PatchType = "strategic" | "merge" | "json" | "apply"

export interface PatchOptions extends WriteOptions {
  readonly subresource?: "status" | undefined
  readonly force?: boolean | undefined
}

/** What a DELETE answers with: the object (still present, or as deleted for pods) or a Success Status. */
export type DeleteResult =
  | { readonly _tag: "Pending"; readonly object: JsonObject }
  | { readonly _tag: "Deleted"; readonly object: JsonObject; readonly body: JsonObject | StatusBody }

export interface DenyRule {
  /** get, list, watch, create, update, patch, delete */
  readonly verb: string
  /** plural, optionally with subresource: "pods", "pods/status" */
  readonly resource: string
  /** API group; any group when absent */
  readonly group?: string | undefined
  readonly namespace?: string | undefined
}

export interface FailureRule {
  /** HTTP method; any when absent */
  readonly method?: string | undefined
  /** matched against the request path (no query) */
  readonly path: string | RegExp
  readonly code: number
  /** remaining injections; forever when absent */
  times?: number | undefined
}

/** Fault injection. Latency and failure rules apply at the HTTP face; stalled watches in the model too. */
export interface Faults {
  latencyMs: number
  failures: Array<FailureRule>
  /** New watches get their response headers and then nothing: no events, no close. */
  stallWatches: boolean
}

export interface ModelOptions {
  /** epoch milliseconds; default Date.now */
  readonly now?: () => number
  /** watch history retained, in events (all resources share one counter, as etcd does); default 1000 */
  readonly historySize?: number
  readonly newUid?: () => string
  /** created at start, Active; default default, kube-system, kube-public, kube-node-lease */
  readonly namespaces?: ReadonlyArray<string>
  /**
   * How a watch that starts at an expired resourceVersion is refused. "event" (default) is what the real
   * server does: the watch cache answers 200 and sends one ERROR event carrying the 410 Expired Status.
   * "status" answers the watch request itself with HTTP 410 (what some proxies and older servers do).
   */
  readonly expiredWatchStart?: "event" | "status"
  /** the user named in Forbidden messages */
  readonly user?: string
  /**
   * Accept a pod PUT without resourceVersion; default true, as kube-apiserver v1.37.2 does. false models
   * the 422 virtual-kubelet PR #1399 reports from 1.35 clusters.
   */
  readonly unconditionalPodUpdates?: boolean
  /**
   * Play the cluster's node admission and lifecycle: a new Node gets node.kubernetes.io/not-ready:NoSchedule
   * (TaintNodesByCondition), removed once its Ready condition is True (the node lifecycle controller).
   * Default false: the node keeps exactly the spec it was created with.
   */
  readonly nodeNotReadyTaint?: boolean
  /**
   * A PUT of a missing lease or event creates it, as the real lease and event strategies allow
   * (AllowCreateOnUpdate). Default true; false answers 404 instead (not what a real server does).
   */
  readonly createOnUpdate?: boolean
}

interface HistoryEntry {
  readonly rv: number
  readonly resource: ResourceInfo
  readonly namespace: string
  readonly type: "ADDED" | "MODIFIED" | "DELETED"
  readonly object: JsonObject
  readonly prev: JsonObject | undefined
}

interface Watcher {
  readonly resource: ResourceInfo
  readonly namespace: string | undefined
  readonly labels: LabelSelector
  readonly fields: FieldSelector
  readonly bookmarks: boolean
  readonly stalled: boolean
  readonly sink: WatchSink
  open: boolean
  lastRv: number
  /** events at or below this resourceVersion are not delivered */
  readonly after: number
}

const rid = (r: ResourceInfo) => `${r.group}/${r.plural}`
const okey = (ns: string, name: string) => `${ns}/${name}`

export const rfc3339 = (ms: number): string => new Date(Math.floor(ms / 1000) * 1000).toISOString().replace(".000Z", "Z")

const str = (u: unknown): string | undefined => (typeof u === "string" ? u : undefined)

const metaOf = (obj: JsonObject): Record<string, unknown> => {
  if (!isRecord(obj["metadata"])) obj["metadata"] = {}
  return obj["metadata"] as Record<string, unknown>
}

const labelsOf = (obj: JsonObject): Record<string, string> => {
  const labels = metaOf(obj)["labels"]
  const out: Record<string, string> = {}
  if (isRecord(labels)) for (const [k, v] of Object.entries(labels)) if (typeof v === "string") out[k] = v
  return out
}

const finalizersOf = (obj: JsonObject): Array<string> => {
  const f = metaOf(obj)["finalizers"]
  return Array.isArray(f) ? f.filter((x): x is string => typeof x === "string") : []
}

const subdomain = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/
const label = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/
const subdomainMessage =
  "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
const labelMessage =
  "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"

const ipv4 = /^(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$/
const isIPv6 = (s: string): boolean => {
  if (!/^[0-9a-fA-F:.]+$/.test(s) || !s.includes(":")) return false
  const dbl = s.split("::")
  if (dbl.length > 2) return false
  const groups = s.replace("::", ":x:").split(":").filter((g) => g !== "")
  const v4Tail = groups.length > 0 && groups[groups.length - 1].includes(".")
  if (v4Tail && !ipv4.test(groups[groups.length - 1])) return false
  const hex = groups.filter((g) => g !== "x" && !g.includes("."))
  if (!hex.every((g) => /^[0-9a-fA-F]{1,4}$/.test(g))) return false
  const count = hex.length + (v4Tail ? 2 : 0)
  return dbl.length === 2 ? count < 8 : count === 8
}
export const isIP = (s: string): boolean => ipv4.test(s) || isIPv6(s)

/**
 * MicroTime as the apiserver decodes it: Go's time.Parse with layout 2006-01-02T15:04:05.000000Z07:00,
 * which takes exactly six fractional digits. Anything else fails JSON decoding, and the server answers
 * 400 BadRequest (a decode error, not a 422 validation error).
 */
const microTimeLayout = "2006-01-02T15:04:05.000000Z07:00"
export const microTimeError = (value: string): string | undefined => {
  const head = value.slice(0, 19)
  if (!/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}$/.test(head)) {
    return `parsing time "${value}" as "${microTimeLayout}": cannot parse "${value}" as "2006"`
  }
  const rest = value.slice(19)
  if (/^\.\d{6}(Z|[+-]\d{2}:\d{2})$/.test(rest)) return undefined
  if (/^\.\d{6}/.test(rest)) return `parsing time "${value}" as "${microTimeLayout}": cannot parse "${rest.slice(7)}" as "Z07:00"`
  return `parsing time "${value}" as "${microTimeLayout}": cannot parse "${rest}" as ".000000"`
}

const randomSuffix = (): string => {
  const alphabet = "bcdfghjklmnpqrstvwxz2456789"
  let s = ""
  for (let i = 0; i < 5; i++) s += alphabet[Math.floor(Math.random() * alphabet.length)]
  return s
}

const listKind = (r: ResourceInfo) => `${r.kind}List`

const continueTooOld =
  "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list."

const encodeContinue = (rv: number, start: string): string =>
  Buffer.from(JSON.stringify({ v: "meta.k8s.io/v1", rv, start })).toString("base64url")

const decodeContinue = (token: string): { rv: number; start: string } | undefined => {
  try {
    const parsed: unknown = JSON.parse(Buffer.from(token, "base64url").toString("utf8"))
    if (!isRecord(parsed) || parsed["v"] !== "meta.k8s.io/v1" || typeof parsed["rv"] !== "number" || typeof parsed["start"] !== "string") {
      return undefined
    }
    return { rv: parsed["rv"], start: parsed["start"] }
  } catch {
    return undefined
  }
}

/**
 * Object metadata validation of ownerReferences, for every kind: each reference names an apiVersion,
 * kind, name and uid, and at most one is the controller. The value in the message is a stand-in for
 * the server's Go rendering of the list (which prints pointer addresses).
 */
const ownerReferenceErrors = (refs: unknown): ReadonlyArray<FieldError> => {
  if (!Array.isArray(refs)) return []
  const errors: Array<FieldError> = []
  const field = "metadata.ownerReferences"
  let firstController: string | undefined
  for (const ref of refs) {
    const entry = isRecord(ref) ? ref : {}
    const text = (key: string) => typeof entry[key] === "string" ? entry[key] : ""
    const version = text("apiVersion").split("/").at(-1) ?? ""
    if (version === "") errors.push({ field: `${field}.apiVersion`, type: "FieldValueInvalid", value: "\"\"", detail: "version must not be empty" })
    if (text("kind") === "") errors.push({ field: `${field}.kind`, type: "FieldValueInvalid", value: "\"\"", detail: "kind must not be empty" })
    if (text("name") === "") errors.push({ field: `${field}.name`, type: "FieldValueInvalid", value: "\"\"", detail: "name must not be empty" })
    if (text("uid") === "") errors.push({ field: `${field}.uid`, type: "FieldValueInvalid", value: "\"\"", detail: "uid must not be empty" })
    if (entry["controller"] === true) {
      const current = `${text("kind")}/${text("name")}`
      if (firstController === undefined) firstController = current
      else {
        errors.push({
          field,
          type: "FieldValueInvalid",
          value: `[]v1.OwnerReference{${refs.length} entries}`,
          detail: `Only one reference can have Controller set to true. Found "true" in references for ${firstController} and ${current}`
        })
      }
    }
  }
  return errors
}

/** Defaults from the CRD schemas (the Sandbox CRD defaults operatingMode and shutdownPolicy). */
const applyDefaults = (r: ResourceInfo, obj: JsonObject): void => {
  if (r.plural !== "sandboxes" || !r.customResource || !isRecord(obj["spec"])) return
  const spec = obj["spec"]
  if (spec["operatingMode"] === undefined) spec["operatingMode"] = "Running"
  if (spec["shutdownPolicy"] === undefined) spec["shutdownPolicy"] = "Retain"
}

/**
 * The v1 ⇄ internal conversion of a pod's IPs: podIP wins when it disagrees with podIPs[0] (and fills an
 * empty podIPs), and podIP is written back as podIPs[0]. hostIP/hostIPs get no such sync.
 */
const syncPodIPs = (pod: JsonObject): void => {
  const status = pod["status"]
  if (!isRecord(status)) return
  const podIP = typeof status["podIP"] === "string" ? status["podIP"] : ""
  const podIPs = Array.isArray(status["podIPs"]) ? status["podIPs"] : []
  if (podIP !== "" && (podIPs.length === 0 || !isRecord(podIPs[0]) || podIPs[0]["ip"] !== podIP)) status["podIPs"] = [{ ip: podIP }]
  const synced = Array.isArray(status["podIPs"]) ? status["podIPs"] : []
  if (podIP === "" && synced.length > 0 && isRecord(synced[0]) && typeof synced[0]["ip"] === "string") status["podIP"] = synced[0]["ip"]
}

const notReadyTaint = { key: "node.kubernetes.io/not-ready", effect: "NoSchedule" } as const

export class ClusterModel {
  readonly resources: ReadonlyArray<ResourceInfo>
  readonly faults: Faults = { latencyMs: 0, failures: [], stallWatches: false }
  readonly user: string
  private readonly now: () => number
  private readonly historySize: number
  private readonly newUid: () => string
  readonly expiredWatchStart: "event" | "status"
  private readonly unconditionalPodUpdates: boolean
  private readonly nodeNotReadyTaint: boolean
  private readonly createOnUpdate: boolean
  private readonly store = new Map<string, Map<string, JsonObject>>()
  private readonly history: Array<HistoryEntry> = []
  private readonly watchers = new Set<Watcher>()
  private readonly denyRules: Array<DenyRule> = []
  private rv = 0
  private compactedRv = 0

  constructor(options: ModelOptions = {}) {
    this.resources = AllResources
    this.now = options.now ?? Date.now
    this.historySize = options.historySize ?? 1000
    this.newUid = options.newUid ?? (() => crypto.randomUUID())
    this.expiredWatchStart = options.expiredWatchStart ?? "event"
    this.user = options.user ?? "system:serviceaccount:vk-sandbox:vk-sandbox"
    this.unconditionalPodUpdates = options.unconditionalPodUpdates ?? true
    this.nodeNotReadyTaint = options.nodeNotReadyTaint ?? false
    this.createOnUpdate = options.createOnUpdate ?? true
    for (const ns of options.namespaces ?? ["default", "kube-system", "kube-public", "kube-node-lease"]) {
      this.create(Namespaces, "", { apiVersion: "v1", kind: "Namespace", metadata: { name: ns } }, { fieldManager: "kube-apiserver" })
    }
  }

  // ---------------------------------------------------------------- test helpers

  /** The global resourceVersion counter (the last one handed out). */
  get resourceVersion(): string {
    return String(this.rv)
  }

  resourceFor(group: string, version: string, plural: string): ResourceInfo | undefined {
    return findResource(this.resources, group, version, plural)
  }

  /** Refuse verb on resource with 403 Forbidden, as RBAC would. */
  deny(rule: DenyRule): void {
    this.denyRules.push(rule)
  }

  clearDenies(): void {
    this.denyRules.length = 0
  }

  /** A copy of the stored object, or undefined (no authorization, no semantics). */
  peek(r: ResourceInfo, ns: string, name: string): JsonObject | undefined {
    const o = this.bucket(r).get(okey(r.namespaced ? ns : "", name))
    return o === undefined ? undefined : clone(o)
  }

  /** Store an object as is, bumping the resourceVersion and notifying watchers; no validation, no admission. */
  put(r: ResourceInfo, obj: JsonObject): JsonObject {
    const o = clone(obj)
    const m = metaOf(o)
    const ns = r.namespaced ? str(m["namespace"]) ?? "default" : ""
    const name = str(m["name"]) ?? ""
    if (r.namespaced) m["namespace"] = ns
    const prev = this.bucket(r).get(okey(ns, name))
    if (m["uid"] === undefined) m["uid"] = prev === undefined ? this.newUid() : metaOf(prev)["uid"]
    if (m["creationTimestamp"] === undefined) m["creationTimestamp"] = rfc3339(this.now())
    return this.commit(r, ns, name, prev === undefined ? "ADDED" : "MODIFIED", o, prev)
  }

  /** Remove an object at once (finalizers and grace ignored), with a DELETED event. */
  remove(r: ResourceInfo, ns: string, name: string): boolean {
    const namespace = r.namespaced ? ns : ""
    const o = this.bucket(r).get(okey(namespace, name))
    if (o === undefined) return false
    this.commit(r, namespace, name, "DELETED", clone(o), o)
    return true
  }

  /**
   * One pass of the garbage collector (a controller, not the apiserver; here on demand): every object whose
   * owners are all gone is deleted in the background way, so a bound pod gets its graceful deletion.
   * Returns the keys (`resource/namespace/name`) it deleted.
   */
  collectGarbage(): Array<string> {
    const deleted: Array<string> = []
    for (const r of this.resources) {
      for (const o of [...this.bucket(r).values()]) {
        const m = metaOf(o)
        const refs = Array.isArray(m["ownerReferences"]) ? m["ownerReferences"].filter(isRecord) : []
        if (refs.length === 0 || m["deletionTimestamp"] !== undefined) continue
        const ns = str(m["namespace"]) ?? ""
        const ownerGone = (ref: Record<string, unknown>) => {
          const owner = this.resources.find((x) => apiVersionOf(x) === ref["apiVersion"] && x.kind === ref["kind"])
          if (owner === undefined) return false // an owner kind the server does not know is left alone
          const scope = owner.namespaced ? ns : ""
          return ![...this.bucket(owner).values()].some((x) => metaOf(x)["uid"] === ref["uid"] && (metaOf(x)["namespace"] ?? "") === scope)
        }
        if (!refs.every(ownerGone)) continue
        const name = str(m["name"]) ?? ""
        if (Result.isSuccess(this.deleteOne(r, ns, name, {}))) deleted.push(`${r.plural}/${ns}/${name}`)
      }
    }
    return deleted
  }

  /** Send a BOOKMARK to every open watch that asked for bookmarks. */
  bookmark(): void {
    for (const w of [...this.watchers]) this.bookmarkOne(w)
  }

  private bookmarkOne(w: Watcher): void {
    // A bookmark never carries a resourceVersion older than the one the watch started from: a watch
    // from a version the server does not have yet (it went backwards) gets none, as on the real server.
    if (w.open && w.bookmarks && !w.stalled && this.rv > w.after) {
      w.lastRv = this.rv
      w.sink.onEvent({ type: "BOOKMARK", object: this.bookmarkObject(w.resource) })
    }
  }

  /** Every open watch gets an ERROR event with a 410 Expired Status and is closed (it fell behind). */
  expireWatches(): void {
    for (const w of [...this.watchers]) {
      if (!w.open) continue
      const e = expired(`too old resource version: ${w.lastRv} (${this.rv})`)
      w.sink.onEvent({ type: "ERROR", object: e.body as JsonObject })
      this.closeWatcher(w, true)
    }
  }

  /** The server closes every open watch without an error (as on an apiserver restart). */
  dropWatches(): void {
    for (const w of [...this.watchers]) this.closeWatcher(w, true)
  }

  /** Forget all history: a watch from any resourceVersion before now gets 410. */
  compact(): void {
    this.history.length = 0
    this.compactedRv = this.rv
  }

  /** The stored objects and the resourceVersion counter, to `restore` later (an etcd backup). */
  snapshot(): ModelSnapshot {
    const store = new Map<string, Map<string, JsonObject>>()
    for (const [plural, bucket] of this.store) store.set(plural, new Map([...bucket].map(([k, o]) => [k, clone(o)])))
    return { store, rv: this.rv }
  }

  /**
   * The server restarts on a restored backup (or on an empty store: a snapshot taken at the start):
   * objects and the resourceVersion counter go back to the snapshot, history is gone, and every
   * open watch is closed as by a restart. A resourceVersion handed out since is then from the future.
   */
  restore(snapshot: ModelSnapshot): void {
    this.dropWatches()
    this.store.clear()
    for (const [plural, bucket] of snapshot.store) this.store.set(plural, new Map([...bucket].map(([k, o]) => [k, clone(o)])))
    this.rv = snapshot.rv
    this.history.length = 0
    this.compactedRv = snapshot.rv
  }

  openWatches(): number {
    return [...this.watchers].filter((w) => w.open).length
  }

  // ---------------------------------------------------------------- reads

  get(r: ResourceInfo, ns: string, name: string): Outcome<JsonObject> {
    const denied = this.authorize("get", r, undefined, ns, name)
    if (denied !== undefined) return Result.fail(denied)
    const o = this.bucket(r).get(okey(r.namespaced ? ns : "", name))
    return o === undefined ? Result.fail(notFound(r, name)) : Result.succeed(clone(o))
  }

  list(r: ResourceInfo, ns: string | undefined, options: ListOptions & PageOptions = {}): Outcome<JsonObject> {
    const denied = this.authorize("list", r, undefined, ns, undefined)
    if (denied !== undefined) return Result.fail(denied)
    const labels = parseLabelSelector(options.labelSelector)
    if (Result.isFailure(labels)) return Result.fail(labels.failure)
    const fields = parseFieldSelector(options.fieldSelector, r.fieldLabels)
    if (Result.isFailure(fields)) return Result.fail(fields.failure)
    const selected = [...this.bucket(r).entries()]
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .filter(([, o]) => this.matches(r, o, ns, labels.success, fields.success))
    // A resourceVersion newer than the server's (it went backwards, or the client is ahead): the real
    // server waits a few seconds for it, then answers 504 Timeout with a ResourceVersionTooLarge cause.
    const atLeast = options.resourceVersion ?? ""
    if (/^\d+$/.test(atLeast) && Number(atLeast) > this.rv) {
      return Result.fail(failure(504, "Timeout", `Timeout: Too large resource version: ${atLeast}, current: ${this.rv}`, {
        causes: [{ reason: "ResourceVersionTooLarge", message: "Too large resource version" }]
      }))
    }
    // pagination: the continue token carries the list's resourceVersion and the key to start after
    let start = 0
    let listRv = this.rv
    if (options.continue !== undefined && options.continue !== "") {
      const token = decodeContinue(options.continue)
      if (token === undefined) return Result.fail(badRequest(`continue key is not valid: illegal base64 data`))
      if (token.rv < this.compactedRv) return Result.fail(expired(continueTooOld))
      listRv = token.rv
      start = selected.findIndex(([k]) => k >= token.start)
      if (start < 0) start = selected.length
    }
    const limit = options.limit ?? 0
    const rest = selected.slice(start)
    const page = limit > 0 ? rest.slice(0, limit) : rest
    const more = page.length < rest.length
    // one JSON round trip for the whole page is much cheaper than a structured clone per item
    const items = (JSON.parse(JSON.stringify(page.map(([, o]) => o))) as Array<JsonObject>).map((o) => this.typedListItem(r, o))
    const unselective = labels.success.length === 0 && fields.success.length === 0
    const envelope = r.customResource ? (o: JsonObject) => sortedKeys(o) as JsonObject : (o: JsonObject) => o
    return Result.succeed(envelope({
      kind: listKind(r),
      apiVersion: apiVersionOf(r),
      metadata: {
        resourceVersion: String(listRv),
        ...(more
          ? {
            continue: encodeContinue(listRv, `${page[page.length - 1][0]}\u0000`),
            // the server counts what is left only when no selector filters the list
            ...(unselective ? { remainingItemCount: rest.length - page.length } : {})
          }
          : {})
      },
      items
    }))
  }

  watch(r: ResourceInfo, ns: string | undefined, options: WatchOptions, sink: WatchSink): Outcome<WatchHandle> {
    const denied = this.authorize("watch", r, undefined, ns, undefined)
    if (denied !== undefined) return Result.fail(denied)
    const labels = parseLabelSelector(options.labelSelector)
    if (Result.isFailure(labels)) return Result.fail(labels.failure)
    const fields = parseFieldSelector(options.fieldSelector, r.fieldLabels)
    if (Result.isFailure(fields)) return Result.fail(fields.failure)
    const rvText = options.resourceVersion ?? ""
    const from = rvText === "" || rvText === "0" ? undefined : Number(rvText)
    if (from !== undefined && (!Number.isInteger(from) || from < 0)) {
      return Result.fail(badRequest(`resourceVersion: Invalid value: "${rvText}": strconv.ParseUint: parsing "${rvText}": invalid syntax`))
    }
    // Past authorization and resourceVersion parsing, the watch cache reports start errors as one ERROR
    // event on a 200 response ("to match the uncached watch implementation"); "status" mode answers them
    // as the HTTP status instead.
    // A resourceVersion from the future is waited for (kube-apiserver v1.37.2 keeps such a watch open and
    // silent): events are delivered only past it.
    const startError = from !== undefined && from < this.compactedRv
      ? expired(`too old resource version: ${from} (${this.compactedRv})`)
      : undefined
    if (startError !== undefined && this.expiredWatchStart === "status") return Result.fail(startError)
    const w: Watcher = {
      resource: r,
      namespace: r.namespaced ? ns : undefined,
      labels: labels.success,
      fields: fields.success,
      bookmarks: options.allowWatchBookmarks === true,
      stalled: this.faults.stallWatches,
      sink,
      open: true,
      lastRv: from ?? this.rv,
      after: from ?? this.rv
    }
    const handle: WatchHandle = {
      close: () => this.closeWatcher(w, false),
      isOpen: () => w.open,
      bookmark: () => this.bookmarkOne(w)
    }
    if (w.stalled) {
      this.watchers.add(w)
      return Result.succeed(handle)
    }
    if (startError !== undefined) {
      sink.onEvent({ type: "ERROR", object: startError.body as JsonObject })
      w.open = false
      sink.onClose()
      return Result.succeed(handle)
    }
    this.watchers.add(w)
    if (from === undefined || options.sendInitialEvents === true) {
      // "" and "0" (and watch-list): synthetic ADDED events for the current state, then changes
      for (const [, o] of [...this.bucket(r).entries()].sort(([a], [b]) => (a < b ? -1 : 1))) {
        if (this.matches(r, o, w.namespace, w.labels, w.fields)) sink.onEvent({ type: "ADDED", object: clone(o) })
      }
      w.lastRv = this.rv
      if (options.sendInitialEvents === true && w.bookmarks) {
        const end = this.bookmarkObject(r)
        metaOf(end)["annotations"] = { "k8s.io/initial-events-end": "true" }
        sink.onEvent({ type: "BOOKMARK", object: end })
      }
    } else {
      for (const h of this.history) if (h.rv > from) this.deliver(w, h)
    }
    return Result.succeed(handle)
  }

  // ---------------------------------------------------------------- writes

  create(r: ResourceInfo, ns: string, body: unknown, options: WriteOptions = {}): Outcome<JsonObject> {
    // the real order: authorization, decoding, admission (NamespaceLifecycle), validation, storage
    const namespace = r.namespaced ? ns : ""
    const denied = this.authorize("create", r, undefined, namespace, undefined)
    if (denied !== undefined) return Result.fail(denied)
    if (!isRecord(body)) return Result.fail(badRequest("the body of the request could not be decoded as an object"))
    const obj: JsonObject = clone(body)
    const m = metaOf(obj)
    const kindCheck = this.checkKind(r, obj)
    if (kindCheck !== undefined) return Result.fail(kindCheck)
    if (r.namespaced) {
      const bodyNs = str(m["namespace"])
      if (bodyNs !== undefined && bodyNs !== "" && bodyNs !== namespace) {
        return Result.fail(badRequest("the namespace of the provided object does not match the namespace sent on the request"))
      }
      m["namespace"] = namespace
    } else {
      delete m["namespace"]
    }
    const decode = this.decodeCheck(r, obj)
    if (decode !== undefined) return Result.fail(decode)
    let name = str(m["name"]) ?? ""
    const generateName = str(m["generateName"])
    if (name === "" && generateName !== undefined && generateName !== "") {
      name = `${generateName}${randomSuffix()}`
      m["name"] = name
    }
    const admitted = this.admitNamespace(r, namespace, name)
    if (admitted !== undefined) return Result.fail(admitted)
    if (name === "") {
      return Result.fail(invalid(errGroup(r), r.kind, "", [
        { field: "metadata.name", type: "FieldValueRequired", detail: "name or generateName is required" }
      ]))
    }
    const nameErr = this.validateName(r, name)
    if (nameErr !== undefined) return Result.fail(nameErr)
    // server-set metadata
    const givenRv = str(m["resourceVersion"])
    m["uid"] = this.newUid()
    m["creationTimestamp"] = rfc3339(this.now())
    delete m["resourceVersion"]
    delete m["deletionTimestamp"]
    delete m["deletionGracePeriodSeconds"]
    delete m["selfLink"]
    if (r.tracksGeneration) m["generation"] = 1
    else delete m["generation"]
    this.prepareForCreate(r, obj)
    const errs = this.validate(r, obj, undefined)
    if (errs !== undefined) return Result.fail(errs)
    // storage: a resourceVersion on a new object is a plain error there (500 InternalError), then the key check
    if (givenRv !== undefined && givenRv !== "" && givenRv !== "0") {
      return Result.fail(plainServerError("resourceVersion should not be set on objects to be created"))
    }
    if (this.bucket(r).has(okey(namespace, name))) return Result.fail(alreadyExists(r, name))
    this.recordManager(obj, undefined, options.fieldManager, "Update", undefined)
    const created = this.commit(r, namespace, name, "ADDED", obj, undefined)
    if (r === Nodes && this.nodeNotReadyTaint) this.nodeLifecycle(name)
    return Result.succeed(created)
  }

  update(r: ResourceInfo, ns: string, name: string, body: unknown, options: WriteOptions = {}): Outcome<JsonObject> {
    return this.replace(r, ns, name, body, undefined, options)
  }

  updateStatus(r: ResourceInfo, ns: string, name: string, body: unknown, options: WriteOptions = {}): Outcome<JsonObject> {
    if (!r.subresources.includes("status")) return Result.fail(notFoundSubresource())
    return this.replace(r, ns, name, body, "status", options)
  }

  patch(
    r: ResourceInfo,
    ns: string,
    name: string,
    patchType: PatchType,
    patchBody: unknown,
    options: PatchOptions = {}
  ): Outcome<{ readonly object: JsonObject; readonly created: boolean }> {
    const sub = options.subresource
    if (sub !== undefined && !r.subresources.includes(sub)) return Result.fail(notFoundSubresource())
    if (patchType === "apply") return this.apply(r, ns, name, patchBody, options)
    if (options.force === true) return Result.fail(badRequest("force is not allowed for non-apply patch types"))
    if (patchType === "strategic" && r.customResource) {
      return Result.fail(
        failure(415, "UnsupportedMediaType", `the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml`)
      )
    }
    const denied = this.authorize("patch", r, sub, ns, name)
    if (denied !== undefined) return Result.fail(denied)
    const namespace = r.namespaced ? ns : ""
    const stored = this.bucket(r).get(okey(namespace, name))
    if (stored === undefined) return Result.fail(notFound(r, name))
    const patched = patchType === "strategic"
      ? strategicMerge(stored, patchBody)
      : patchType === "merge"
      ? isRecord(patchBody)
        ? Result.succeed(jsonMergePatch(stored, patchBody))
        : Result.fail(badRequest("json: cannot unmarshal array into Go value of type map[string]interface {}"))
      : jsonPatch(stored, patchBody)
    if (Result.isFailure(patched)) return Result.fail(patched.failure)
    if (!isRecord(patched.success)) return Result.fail(badRequest("the patched object is not an object"))
    const next: JsonObject = patched.success
    // a patch carries the stored resourceVersion unless it set one itself (then it is a precondition)
    const out = this.replace(r, ns, name, next, sub, options, stored)
    return Result.map(out, (object) => ({ object, created: false }))
  }

  delete(r: ResourceInfo, ns: string, name: string, options: DeleteOptions = {}): Outcome<DeleteResult> {
    const denied = this.authorize("delete", r, undefined, ns, name)
    if (denied !== undefined) return Result.fail(denied)
    return this.deleteOne(r, ns, name, options)
  }

  /** DELETE on a collection: each selected object is deleted as by `delete`; answers the list of them. */
  deleteCollection(
    r: ResourceInfo,
    ns: string | undefined,
    selectors: ListOptions = {},
    options: DeleteOptions = {}
  ): Outcome<JsonObject> {
    const denied = this.authorize("deletecollection", r, undefined, ns, undefined)
    if (denied !== undefined) return Result.fail(denied)
    const labels = parseLabelSelector(selectors.labelSelector)
    if (Result.isFailure(labels)) return Result.fail(labels.failure)
    const fields = parseFieldSelector(selectors.fieldSelector, r.fieldLabels)
    if (Result.isFailure(fields)) return Result.fail(fields.failure)
    const targets = [...this.bucket(r).entries()]
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([, o]) => o)
      .filter((o) => this.matches(r, o, ns, labels.success, fields.success))
    // the answer is the list taken before deleting (kube-apiserver v1.37.2): items as they were, its resourceVersion
    const listed = { kind: listKind(r), apiVersion: apiVersionOf(r), metadata: { resourceVersion: String(this.rv) }, items: targets.map((o) => this.listItem(r, o)) }
    for (const o of targets) {
      const m = metaOf(o)
      this.deleteOne(r, str(m["namespace"]) ?? "", str(m["name"]) ?? "", options)
    }
    return Result.succeed(listed)
  }

  /**
   * pods/binding (what the scheduler does): set spec.nodeName of a pod that has none.
   * A pod already bound is a 409 Conflict on pods/binding.
   */
  bind(ns: string, name: string, nodeName: string): Outcome<JsonObject> {
    const denied = this.authorize("create", Pods, "binding", ns, name)
    if (denied !== undefined) return Result.fail(denied)
    const stored = this.bucket(Pods).get(okey(ns, name))
    if (stored === undefined) return Result.fail(notFound(Pods, name))
    const spec = isRecord(stored["spec"]) ? stored["spec"] : {}
    const bound = str(spec["nodeName"]) ?? ""
    const binding = { group: "", plural: "pods/binding" }
    if (bound !== "") {
      return Result.fail(conflict(binding, name, `pod ${name} is already assigned to node "${bound}"`))
    }
    if (metaOf(stored)["deletionTimestamp"] !== undefined) {
      return Result.fail(conflict(binding, name, `pod ${name} is being deleted, cannot be assigned to a host`))
    }
    const next = clone(stored)
    next["spec"] = { ...spec, nodeName }
    this.commit(Pods, ns, name, "MODIFIED", next, stored)
    return Result.succeed({ kind: "Status", apiVersion: "v1", metadata: {}, status: "Success", code: 201 })
  }

  private deleteOne(r: ResourceInfo, ns: string, name: string, options: DeleteOptions): Outcome<DeleteResult> {
    const namespace = r.namespaced ? ns : ""
    const stored = this.bucket(r).get(okey(namespace, name))
    if (stored === undefined) return Result.fail(notFound(r, name))
    const sm = metaOf(stored)
    const uid = str(sm["uid"]) ?? ""
    const pre = options.preconditions
    // DELETE checks its preconditions early, naming the Kind (kube-apiserver v1.37.2 wording)
    const byKind = { group: r.group, plural: r.kind }
    if (pre?.uid !== undefined && pre.uid !== uid) {
      return Result.fail(conflict(byKind, name, `the UID in the precondition (${pre.uid}) does not match the UID in record (${uid}). The object might have been deleted and then recreated`))
    }
    if (pre?.resourceVersion !== undefined && pre.resourceVersion !== sm["resourceVersion"]) {
      return Result.fail(conflict(byKind, name, `the ResourceVersion in the precondition (${pre.resourceVersion}) does not match the ResourceVersion in record (${String(sm["resourceVersion"])}). The object might have been modified`))
    }
    if (r === Namespaces) return Result.succeed(this.deleteNamespace(stored, name))
    const next = clone(stored)
    const m = metaOf(next)
    const finalizers = finalizersOf(next)
    const existingGrace = typeof sm["deletionGracePeriodSeconds"] === "number" ? sm["deletionGracePeriodSeconds"] : undefined
    const asked = options.gracePeriodSeconds
    const requested = asked === undefined ? undefined : asked < 0 ? 1 : asked // negative means 1 s on the delete path
    // Pods have the graceful-delete strategy: every DELETE first writes deletionTimestamp and
    // deletionGracePeriodSeconds (a MODIFIED event), even with grace 0; the object then goes at once
    // if the grace is 0 and no finalizer holds it. Other resources go at once (or wait for finalizers).
    let marked = false
    if (sm["deletionTimestamp"] !== undefined) {
      if (existingGrace !== undefined && existingGrace !== 0) {
        // already being deleted: only a shorter grace period (as asked, not re-derived) changes anything
        if (requested === undefined || requested >= existingGrace) return Result.succeed({ _tag: "Pending", object: clone(stored) })
        const ts = Date.parse(String(sm["deletionTimestamp"])) - existingGrace * 1000 + requested * 1000
        m["deletionTimestamp"] = rfc3339(ts)
        m["deletionGracePeriodSeconds"] = requested
        marked = true
      }
    } else if (r === Pods) {
      const grace = this.gracePeriod(r, stored, requested)
      m["deletionTimestamp"] = rfc3339(this.now() + grace * 1000)
      m["deletionGracePeriodSeconds"] = grace
      if (typeof m["generation"] === "number" && m["generation"] > 0) m["generation"] = m["generation"] + 1
      marked = true
    } else if (finalizers.length > 0) {
      // finalizers hold the object: it is marked for deletion now, with grace 0
      m["deletionTimestamp"] = rfc3339(this.now())
      m["deletionGracePeriodSeconds"] = 0
      if (typeof m["generation"] === "number" && m["generation"] > 0) m["generation"] = m["generation"] + 1
      marked = true
    }
    let current = stored
    let markedObject: JsonObject | undefined
    if (marked) {
      markedObject = this.commit(r, namespace, name, "MODIFIED", next, stored)
      current = this.bucket(r).get(okey(namespace, name)) ?? stored
    }
    const grace = metaOf(current)["deletionGracePeriodSeconds"]
    const removeNow = finalizers.length === 0 && (grace === undefined || grace === 0)
    if (!removeNow) return Result.succeed({ _tag: "Pending", object: markedObject ?? clone(stored) })
    const deleted = this.commit(r, namespace, name, "DELETED", clone(current), current)
    return Result.succeed({
      _tag: "Deleted",
      object: deleted,
      body: r.returnDeletedObject ? deleted : success(r, name, uid)
    })
  }

  /** The namespace controller's job: remove everything in the namespace, then the namespace. */
  finalizeNamespace(name: string): void {
    for (const r of this.resources) {
      if (!r.namespaced) continue
      for (const [k, o] of [...this.bucket(r).entries()]) {
        if (k.startsWith(`${name}/`)) this.commit(r, name, str(metaOf(o)["name"]) ?? "", "DELETED", clone(o), o)
      }
    }
    const ns = this.bucket(Namespaces).get(okey("", name))
    if (ns !== undefined) this.commit(Namespaces, "", name, "DELETED", clone(ns), ns)
  }

  // ---------------------------------------------------------------- server-side apply

  private apply(
    r: ResourceInfo,
    ns: string,
    name: string,
    body: unknown,
    options: PatchOptions
  ): Outcome<{ readonly object: JsonObject; readonly created: boolean }> {
    const manager = options.fieldManager
    if (manager === undefined || manager === "") {
      return Result.fail(invalid("meta.k8s.io", "PatchOptions", "", [
        { field: "fieldManager", type: "FieldValueRequired", detail: "is required for apply patch" }
      ]))
    }
    if (!isRecord(body)) return Result.fail(badRequest("error decoding YAML: the apply configuration is not an object"))
    const applied: JsonObject = clone(body)
    const apiVersion = str(applied["apiVersion"]) ?? ""
    const kind = str(applied["kind"]) ?? ""
    if (apiVersion === "" || kind === "") {
      return Result.fail(badRequest(`invalid object type: ${apiVersion === "" ? "/" : apiVersion}, Kind=${kind}`))
    }
    const kindCheck = this.checkKind(r, applied)
    if (kindCheck !== undefined) return Result.fail(kindCheck)
    const am = metaOf(applied)
    const bodyName = str(am["name"])
    if (bodyName !== undefined && bodyName !== "" && bodyName !== name) {
      return Result.fail(badRequest(`the name of the object (${bodyName}) does not match the name on the URL (${name})`))
    }
    const decode = this.decodeCheck(r, applied)
    if (decode !== undefined) return Result.fail(decode)
    const namespace = r.namespaced ? ns : ""
    const stored = this.bucket(r).get(okey(namespace, name))
    if (stored === undefined) {
      // the first apply creates the object
      const created = clone(applied)
      const cm = metaOf(created)
      cm["name"] = name
      delete cm["creationTimestamp"] // the applier's creationTimestamp: null is ignored
      delete cm["managedFields"]
      if (r.namespaced) cm["namespace"] = namespace
      const denied = this.authorize("patch", r, options.subresource, namespace, name)
      if (denied !== undefined) return Result.fail(denied)
      const nameErr = this.validateName(r, name)
      if (nameErr !== undefined) return Result.fail(nameErr)
      const admitted = this.admitNamespace(r, namespace, name)
      if (admitted !== undefined) return Result.fail(admitted)
      cm["uid"] = this.newUid()
      cm["creationTimestamp"] = rfc3339(this.now())
      if (r.tracksGeneration) cm["generation"] = 1
      this.prepareForCreate(r, created)
      const errs = this.validate(r, created, undefined)
      if (errs !== undefined) return Result.fail(errs)
      this.setManagedFields(created, [
        this.managedEntry(manager, "Apply", apiVersionOf(r), leafPaths(appliedFields(applied)), options.subresource)
      ])
      return Result.succeed({ object: this.commit(r, namespace, name, "ADDED", created, undefined), created: true })
    }
    const denied = this.authorize("patch", r, options.subresource, namespace, name)
    if (denied !== undefined) return Result.fail(denied)
    const appliedSet = leafPaths(appliedFields(applied))
    const entries = this.managedEntries(stored)
    // conflicts: a field another manager owns, set to a different value
    const conflicts: Array<{ manager: string; path: string; entry: number }> = []
    entries.forEach((e, i) => {
      if (e.manager === manager && e.operation === "Apply") return
      for (const p of e.fields) {
        if (appliedSet.has(p) && !sameValue(getPath(stored, fromKey(p)), getPath(applied, fromKey(p)))) {
          conflicts.push({ manager: e.manager, path: p, entry: i })
        }
      }
    })
    if (conflicts.length > 0 && options.force !== true) {
      // worded as kube-apiserver v1.37.2 does: one conflict inline, several listed per manager
      const field = (c: { path: string }) => `.${fromKey(c.path).join(".")}`
      const managers = [...new Set(conflicts.map((c) => c.manager))]
      const message = conflicts.length === 1
        ? `Apply failed with 1 conflict: conflict with "${conflicts[0].manager}": ${field(conflicts[0])}`
        : `Apply failed with ${conflicts.length} conflicts: ${
          managers.map((mg) => `conflicts with "${mg}":\n${conflicts.filter((c) => c.manager === mg).map((c) => `- ${field(c)}`).join("\n")}`).join("\n")
        }`
      return Result.fail(
        failure(409, "Conflict", message, {
          causes: conflicts.map((c) => ({ reason: "FieldManagerConflict", message: `conflict with "${c.manager}"`, field: field(c) }))
        })
      )
    }
    for (const c of conflicts) entries[c.entry].fields.delete(c.path)
    const next = clone(stored)
    const mine = entries.find((e) => e.manager === manager && e.operation === "Apply")
    const ownedByOthers = new Set(entries.filter((e) => e !== mine).flatMap((e) => [...e.fields]))
    for (const p of mine?.fields ?? []) {
      if (!appliedSet.has(p) && !ownedByOthers.has(p)) deletePath(next, fromKey(p))
    }
    for (const p of appliedSet) setPath(next, fromKey(p), getPath(applied, fromKey(p)))
    // others lose fields this apply now sets (forced) — done above; the applier owns exactly appliedSet
    const others = entries.filter((e) => e !== mine)
    for (const e of others) for (const p of appliedSet) if (e.fields.has(p) && conflicts.some((c) => c.path === p)) e.fields.delete(p)
    // the applier's timestamp moves only when the apply changed something; the others keep theirs
    const changed = !sameValue(withoutVolatile(next), withoutVolatile(stored))
    const newEntries = [
      ...others,
      { manager, operation: "Apply", apiVersion: apiVersionOf(r), fields: appliedSet, time: changed ? undefined : mine?.time, subresource: options.subresource }
    ]
    const result = this.replace(r, ns, name, next, options.subresource, {}, stored, newEntries)
    return Result.map(result, (object) => ({ object, created: false }))
  }

  // ---------------------------------------------------------------- internals

  private bucket(r: ResourceInfo): Map<string, JsonObject> {
    let b = this.store.get(rid(r))
    if (b === undefined) {
      b = new Map()
      this.store.set(rid(r), b)
    }
    return b
  }

  private authorize(
    verb: string,
    r: ResourceInfo,
    sub: string | undefined,
    ns: string | undefined,
    name: string | undefined
  ): ApiStatusError | undefined {
    const resource = sub === undefined ? r.plural : `${r.plural}/${sub}`
    const namespace = r.namespaced ? ns : undefined
    const hit = this.denyRules.some((d) =>
      d.verb === verb && d.resource === resource && (d.group === undefined || d.group === r.group) &&
      (d.namespace === undefined || d.namespace === namespace)
    )
    return hit ? rbacForbidden(r, sub, name, verb, this.user, namespace) : undefined
  }

  private checkKind(r: ResourceInfo, obj: JsonObject): ApiStatusError | undefined {
    const apiVersion = str(obj["apiVersion"])
    const kind = str(obj["kind"])
    if (apiVersion !== undefined && apiVersion !== "" && apiVersion !== apiVersionOf(r)) {
      return badRequest(`the API version in the data (${apiVersion}) does not match the expected API version (${apiVersionOf(r)})`)
    }
    if (kind !== undefined && kind !== "" && kind !== r.kind) {
      return badRequest(`the kind in the data (${kind}) does not match the expected kind (${r.kind})`)
    }
    obj["apiVersion"] = apiVersionOf(r)
    obj["kind"] = r.kind
    return undefined
  }

  /** Fields whose JSON decoding fails in the real server (400 BadRequest before any validation). */
  private decodeCheck(r: ResourceInfo, obj: JsonObject): ApiStatusError | undefined {
    const micro: Array<Array<string>> = r.plural === "leases"
      ? [["spec", "renewTime"], ["spec", "acquireTime"]]
      : r.plural === "events"
      ? [["eventTime"]]
      : []
    for (const path of micro) {
      const v = getPath(obj, path)
      if (v === undefined || v === null) continue
      const err = typeof v === "string" ? microTimeError(v) : `json: cannot unmarshal ${typeof v} into Go struct field`
      if (err !== undefined) {
        return badRequest(`${r.kind} in version "${r.version}" cannot be handled as a ${r.kind}: ${err}`)
      }
    }
    return undefined
  }

  private validateName(r: ResourceInfo, name: string): ApiStatusError | undefined {
    const isLabel = r === Namespaces
    const ok = isLabel ? label.test(name) && name.length <= 63 : subdomain.test(name) && name.length <= 253
    if (ok) return undefined
    return invalid(errGroup(r), r.kind, name, [
      { field: "metadata.name", type: "FieldValueInvalid", value: JSON.stringify(name), detail: isLabel ? labelMessage : subdomainMessage }
    ])
  }

  /** NamespaceLifecycle admission: 404 for a missing namespace, 403 for one being deleted. */
  private admitNamespace(r: ResourceInfo, ns: string, name: string): ApiStatusError | undefined {
    if (!r.namespaced) return undefined
    const n = this.bucket(Namespaces).get(okey("", ns))
    if (n === undefined) return notFound(Namespaces, ns)
    if (metaOf(n)["deletionTimestamp"] !== undefined) return namespaceTerminating(r, name, ns)
    return undefined
  }

  private gracePeriod(r: ResourceInfo, stored: JsonObject, requested: number | undefined): number {
    if (r !== Pods) return 0
    const spec = isRecord(stored["spec"]) ? stored["spec"] : {}
    const status = isRecord(stored["status"]) ? stored["status"] : {}
    let period = requested ?? (typeof spec["terminationGracePeriodSeconds"] === "number" ? spec["terminationGracePeriodSeconds"] : 30)
    // the pod strategy: a pod never scheduled, or already terminal, goes at once whatever was asked
    if (str(spec["nodeName"]) === undefined || spec["nodeName"] === "") period = 0
    if (status["phase"] === "Succeeded" || status["phase"] === "Failed") period = 0
    return period < 0 ? 1 : period
  }

  private deleteNamespace(stored: JsonObject, name: string): DeleteResult {
    const m = metaOf(stored)
    if (m["deletionTimestamp"] !== undefined) return { _tag: "Pending", object: clone(stored) }
    const next = clone(stored)
    const nm = metaOf(next)
    nm["deletionTimestamp"] = rfc3339(this.now())
    next["status"] = { phase: "Terminating" }
    return { _tag: "Pending", object: this.commit(Namespaces, "", name, "MODIFIED", next, stored) }
  }

  private prepareForCreate(r: ResourceInfo, obj: JsonObject): void {
    if (r === Nodes && this.nodeNotReadyTaint) {
      const spec = isRecord(obj["spec"]) ? obj["spec"] : {}
      const taints = Array.isArray(spec["taints"]) ? spec["taints"] : []
      if (!taints.some((t) => isRecord(t) && t["key"] === notReadyTaint.key && t["effect"] === notReadyTaint.effect)) {
        obj["spec"] = { ...spec, taints: [...taints, { ...notReadyTaint }] }
      }
    }
    if (r === Pods) {
      const spec = isRecord(obj["spec"]) ? obj["spec"] : {}
      obj["spec"] = {
        restartPolicy: "Always",
        terminationGracePeriodSeconds: 30,
        dnsPolicy: "ClusterFirst",
        schedulerName: "default-scheduler",
        enableServiceLinks: true,
        securityContext: {},
        ...spec
      }
      const containers = Array.isArray((obj["spec"] as JsonObject)["containers"]) ? (obj["spec"] as JsonObject)["containers"] as Array<unknown> : []
      const hasResources = containers.some((c) => isRecord(c) && isRecord(c["resources"]) && Object.keys(c["resources"]).length > 0)
      // the pod strategy resets status on create
      obj["status"] = { phase: "Pending", qosClass: hasResources ? "Burstable" : "BestEffort" }
    } else if (r === Namespaces) {
      obj["spec"] = { finalizers: ["kubernetes"] }
      obj["status"] = { phase: "Active" }
      const m = metaOf(obj)
      const labels = isRecord(m["labels"]) ? m["labels"] : {}
      m["labels"] = { ...labels, "kubernetes.io/metadata.name": str(m["name"]) ?? "" }
    } else if (r.customResource && r.subresources.includes("status")) {
      delete obj["status"] // a CR with a status subresource ignores status on create
    }
    applyDefaults(r, obj)
  }

  private validate(r: ResourceInfo, obj: JsonObject, old: JsonObject | undefined): ApiStatusError | undefined {
    const name = str(metaOf(obj)["name"]) ?? ""
    const errors: Array<FieldError> = [...ownerReferenceErrors(metaOf(obj)["ownerReferences"])]
    if (r === Pods) {
      const spec = isRecord(obj["spec"]) ? obj["spec"] : {}
      if (!Array.isArray(spec["containers"]) || spec["containers"].length === 0) {
        errors.push({ field: "spec.containers", type: "FieldValueRequired", detail: "" })
      }
      const status = isRecord(obj["status"]) ? obj["status"] : {}
      const ipErrors = (field: "podIPs" | "hostIPs") => {
        const list = status[field]
        if (!Array.isArray(list)) return
        list.forEach((e, i) => {
          const ip = isRecord(e) ? e["ip"] : undefined
          if (typeof ip !== "string" || !isIP(ip)) {
            errors.push({
              field: `status.${field}[${i}]`,
              type: "FieldValueInvalid",
              value: JSON.stringify(ip ?? ""),
              detail: "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"
            })
          }
        })
      }
      ipErrors("podIPs")
      // hostIP is not synced into hostIPs on decoding (podIP is): a hostIPs list must start with hostIP
      const hostIPs = Array.isArray(status["hostIPs"]) ? status["hostIPs"] : []
      if (hostIPs.length > 0) {
        const first = isRecord(hostIPs[0]) ? hostIPs[0]["ip"] : undefined
        if (first !== (status["hostIP"] ?? "")) {
          errors.push({ field: "status.hostIPs[0].ip", type: "FieldValueInvalid", value: JSON.stringify(first ?? ""), detail: "must be equal to `hostIP`" })
        }
      }
      ipErrors("hostIPs")
    }
    if (r === CoreEvents) {
      // legacy events: involvedObject.namespace must be the event's namespace (or empty, for "default")
      const involved = getPath(obj, ["involvedObject", "namespace"])
      const eventNs = str(metaOf(obj)["namespace"]) ?? ""
      const given = typeof involved === "string" ? involved : ""
      if (given === "" ? eventNs !== "" && eventNs !== "default" : given !== eventNs) {
        errors.push({ field: "involvedObject.namespace", type: "FieldValueInvalid", value: JSON.stringify(given), detail: "does not match event.namespace" })
      }
    }
    if (r === EventsV1) {
      // events.k8s.io/v1 writes get the strict event validation (core/v1 keeps the lenient legacy rules)
      for (const f of ["eventTime", "reportingController", "reportingInstance", "action", "reason"]) {
        const v = obj[f]
        if (v === undefined || v === null || v === "") errors.push({ field: f, type: "FieldValueRequired", detail: "" })
      }
      const type = obj["type"]
      if (type !== "Normal" && type !== "Warning") {
        errors.push({
          field: "type",
          type: "FieldValueNotSupported",
          value: JSON.stringify(typeof type === "string" ? type : ""),
          detail: "supported values: \"Normal\", \"Warning\""
        })
      }
    }
    if (r.plural === "leases") {
      const d = getPath(obj, ["spec", "leaseDurationSeconds"])
      if (typeof d === "number" && d <= 0) {
        errors.push({ field: "spec.leaseDurationSeconds", type: "FieldValueInvalid", value: String(d), detail: "must be greater than 0" })
      }
    }
    if (old !== undefined) {
      const before = finalizersOf(old)
      const added = finalizersOf(obj).filter((f) => !before.includes(f))
      if (metaOf(old)["deletionTimestamp"] !== undefined && added.length > 0) {
        errors.push({ field: "metadata.finalizers", type: "FieldValueForbidden", detail: "no new finalizers can be added if the object is being deleted" })
      }
    }
    if (r === Pods && old !== undefined) {
      const a = isRecord(obj["spec"]) ? mutableSpec(obj["spec"]) : {}
      const b = isRecord(old["spec"]) ? mutableSpec(old["spec"]) : {}
      if (!sameValue(a, b)) {
        errors.push({
          field: "spec",
          type: "FieldValueForbidden",
          detail:
            "pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)"
        })
      }
    }
    return errors.length === 0 ? undefined : invalid(errGroup(r), r.kind, name, errors)
  }

  /**
   * PUT (and the final step of PATCH and apply). `presetBase` is the stored object a patch was computed
   * from; `entries` replaces managedFields (apply).
   */
  private replace(
    r: ResourceInfo,
    ns: string,
    name: string,
    body: unknown,
    sub: "status" | undefined,
    options: WriteOptions,
    patchedFrom?: JsonObject,
    entries?: Array<ManagedEntry>
  ): Outcome<JsonObject> {
    if (!isRecord(body)) return Result.fail(badRequest("the body of the request could not be decoded as an object"))
    const namespace = r.namespaced ? ns : ""
    if (patchedFrom === undefined) {
      const denied = this.authorize("update", r, sub, ns, name)
      if (denied !== undefined) return Result.fail(denied)
    }
    const obj: JsonObject = clone(body)
    const kindCheck = this.checkKind(r, obj)
    if (kindCheck !== undefined) return Result.fail(kindCheck)
    const m = metaOf(obj)
    const bodyName = str(m["name"])
    if (bodyName !== undefined && bodyName !== name) {
      return Result.fail(badRequest(`the name of the object (${bodyName}) does not match the name on the URL (${name})`))
    }
    if (r.namespaced) {
      const bodyNs = str(m["namespace"])
      if (bodyNs !== undefined && bodyNs !== "" && bodyNs !== namespace) {
        return Result.fail(badRequest("the namespace of the provided object does not match the namespace sent on the request"))
      }
    }
    const decode = this.decodeCheck(r, obj)
    if (decode !== undefined) return Result.fail(decode)
    const stored = this.bucket(r).get(okey(namespace, name))
    if (stored === undefined && patchedFrom === undefined && sub === undefined && r.allowCreateOnUpdate && this.createOnUpdate) {
      // AllowCreateOnUpdate (leases, events): the PUT creates the object, whatever resourceVersion it carries;
      // but a uid in the body is a storage precondition, which a missing object (uid "") fails: 409
      const bodyUid = str(m["uid"])
      if (bodyUid !== undefined && bodyUid !== "") return Result.fail(uidPreconditionConflict(r, name, bodyUid, "", registryKey(r, namespace, name)))
      const fresh = clone(obj)
      delete metaOf(fresh)["resourceVersion"]
      metaOf(fresh)["name"] = name
      return this.create(r, ns, fresh, options)
    }
    if (stored === undefined) return Result.fail(notFound(r, name))
    if (patchedFrom !== undefined && stored !== patchedFrom) return Result.fail(staleConflict(r, name))
    const sm = metaOf(stored)
    // storage checks the uid precondition (taken from the body) before comparing resourceVersions
    const uid = str(m["uid"])
    const storedUid = str(sm["uid"]) ?? ""
    if (uid !== undefined && uid !== "" && uid !== storedUid) {
      return Result.fail(uidPreconditionConflict(r, name, uid, storedUid, registryKey(r, namespace, name)))
    }
    const rv = str(m["resourceVersion"]) ?? ""
    if (rv === "" || rv === "0") {
      // pods, nodes, events, namespaces allow an unconditional update (AllowUnconditionalUpdate); leases and
      // custom resources refuse it with 422 naming the resource (not the Kind) in the message
      const unconditional = r === Pods ? this.unconditionalPodUpdates : r.allowUnconditionalUpdate
      if (!unconditional) {
        return Result.fail(invalid(r.group, r.plural, name, [
          { field: "metadata.resourceVersion", type: "FieldValueInvalid", value: "0", detail: "must be specified for an update" }
        ]))
      }
    } else if (rv !== sm["resourceVersion"]) {
      return Result.fail(staleConflict(r, name))
    }
    // the strategy
    let next: JsonObject
    if (sub === "status") {
      if (r.customResource) {
        next = clone(stored)
        if (obj["status"] === undefined) delete next["status"]
        else next["status"] = clone(obj["status"])
      } else {
        next = obj
        next["spec"] = clone(stored["spec"])
        if (next["spec"] === undefined) delete next["spec"]
        if (r === Pods) {
          // pods/status keeps ownerReferences (old kubelets corrupted them); labels, annotations, finalizers come from the request
          const refs = sm["ownerReferences"]
          if (refs === undefined) delete m["ownerReferences"]
          else m["ownerReferences"] = clone(refs)
          // the QoS class is the pod's, fixed at creation: the status write keeps the stored one
          const qos = getPath(stored, ["status", "qosClass"])
          if (qos !== undefined) next["status"] = { ...(isRecord(next["status"]) ? next["status"] : {}), qosClass: qos }
        }
      }
    } else {
      next = obj
      if (r.subresources.includes("status")) {
        if (stored["status"] === undefined) delete next["status"]
        else next["status"] = clone(stored["status"])
      }
    }
    // BeforeUpdate: system fields come from storage
    const nm = metaOf(next)
    nm["name"] = name
    if (r.namespaced) nm["namespace"] = namespace
    nm["uid"] = storedUid
    nm["creationTimestamp"] = sm["creationTimestamp"]
    for (const k of ["deletionTimestamp", "deletionGracePeriodSeconds", "generation"] as const) {
      if (sm[k] === undefined) delete nm[k]
      else nm[k] = sm[k]
    }
    if (sm["managedFields"] !== undefined) nm["managedFields"] = clone(sm["managedFields"])
    else delete nm["managedFields"]
    nm["resourceVersion"] = sm["resourceVersion"]
    if (r.tracksGeneration && typeof nm["generation"] === "number") {
      const strip = (o: JsonObject) => {
        const c = clone(o)
        delete c["metadata"]
        if (r.subresources.includes("status")) delete c["status"]
        return c
      }
      if (!sameValue(strip(next), strip(stored))) nm["generation"] = nm["generation"] + 1
    }
    if (r === Pods) syncPodIPs(next)
    applyDefaults(r, next)
    const errs = this.validate(r, next, stored)
    if (errs !== undefined) return Result.fail(errs)
    if (entries !== undefined) {
      const time = rfc3339(this.now())
      this.setManagedFields(next, entries.filter((e) => e.fields.size > 0).map((e) =>
        this.managedEntry(e.manager, e.operation, e.apiVersion, e.fields, e.subresource, e.time ?? time)
      ))
    } else {
      this.recordManager(next, stored, options.fieldManager, "Update", sub)
    }
    // A pod's times are stored at whole seconds (metav1.Time); the manager's bookkeeping above saw
    // the request's own values, so a time sent with a fraction counts as a change of that field
    // and moves the manager's managedFields time, although the stored status ends up the same.
    if (r === Pods) truncatePodTimes(next)
    // no-op: no new resourceVersion, no event. The comparison includes managedFields, as the real
    // server compares the whole object it would store.
    if (sameValue(withoutResourceVersion(next), withoutResourceVersion(stored))) return Result.succeed(clone(stored))
    const fin = finalizersOf(next)
    const dgp = nm["deletionGracePeriodSeconds"]
    if (nm["deletionTimestamp"] !== undefined && fin.length === 0 && finalizersOf(stored).length > 0 && dgp === 0) {
      // the last finalizer was removed from an object marked for deletion: it goes now
      return Result.succeed(this.commit(r, namespace, name, "DELETED", next, stored))
    }
    const written = this.commit(r, namespace, name, "MODIFIED", next, stored)
    if (r === Nodes && this.nodeNotReadyTaint) this.nodeLifecycle(name)
    return Result.succeed(written)
  }

  /** The node lifecycle controller's part: drop the not-ready taint once Ready=True (its own write). */
  private nodeLifecycle(name: string): void {
    const stored = this.bucket(Nodes).get(okey("", name))
    if (stored === undefined) return
    const conditions = getPath(stored, ["status", "conditions"])
    const ready = Array.isArray(conditions) && conditions.some((c) => isRecord(c) && c["type"] === "Ready" && c["status"] === "True")
    const spec = isRecord(stored["spec"]) ? stored["spec"] : {}
    const taints = Array.isArray(spec["taints"]) ? spec["taints"] : []
    const kept = taints.filter((t) => !(isRecord(t) && t["key"] === notReadyTaint.key))
    if (!ready || kept.length === taints.length) return
    const next = clone(stored)
    next["spec"] = { ...spec, taints: kept }
    if (kept.length === 0) delete (next["spec"] as JsonObject)["taints"]
    this.recordManager(next, stored, "kube-controller-manager", "Update", undefined)
    this.commit(Nodes, "", name, "MODIFIED", next, stored)
  }

  private managedEntries(obj: JsonObject): Array<ManagedEntry> {
    const mf = metaOf(obj)["managedFields"]
    if (!Array.isArray(mf)) return []
    return mf.filter(isRecord).map((e) => ({
      manager: str(e["manager"]) ?? "",
      operation: str(e["operation"]) ?? "Update",
      apiVersion: str(e["apiVersion"]) ?? "",
      fields: fromFieldsV1(e["fieldsV1"]),
      time: str(e["time"]),
      subresource: e["subresource"] === "status" ? "status" : undefined
    }))
  }

  private managedEntry(
    manager: string,
    operation: string,
    apiVersion: string,
    fields: Set<string>,
    subresource: string | undefined,
    time?: string
  ): JsonObject {
    return {
      manager,
      operation,
      apiVersion,
      time: time ?? rfc3339(this.now()),
      fieldsType: "FieldsV1",
      fieldsV1: toFieldsV1(fields),
      ...(subresource !== undefined ? { subresource } : {})
    }
  }

  private setManagedFields(obj: JsonObject, entries: Array<JsonObject>): void {
    const m = metaOf(obj)
    if (entries.length === 0) delete m["managedFields"]
    else m["managedFields"] = entries
  }

  /** Update-operation bookkeeping: the writer owns the fields it changed; removed fields lose their owners. */
  private recordManager(
    next: JsonObject,
    stored: JsonObject | undefined,
    fieldManager: string | undefined,
    operation: "Update",
    sub: "status" | undefined
  ): void {
    const manager = fieldManager ?? "unknown"
    const after = leafPaths(next)
    const before = stored === undefined ? new Set<string>() : leafPaths(stored)
    const changed = new Set([...after].filter((p) => !before.has(p) || !sameValue(getPath(next, fromKey(p)), getPath(stored, fromKey(p)))))
    const entries = stored === undefined ? [] : this.managedEntries(stored)
    for (const e of entries) for (const p of [...e.fields]) if (!after.has(p) || changed.has(p)) e.fields.delete(p)
    let mine = entries.find((e) => e.manager === manager && e.operation === operation && e.subresource === sub)
    if (mine === undefined && changed.size > 0) {
      mine = { manager, operation, apiVersion: str(next["apiVersion"]) ?? "", fields: new Set(), time: undefined, subresource: sub }
      entries.push(mine)
    }
    const time = rfc3339(this.now())
    if (mine !== undefined) {
      for (const p of changed) mine.fields.add(p)
      if (changed.size > 0) mine.time = time
    }
    this.setManagedFields(
      next,
      entries.filter((e) => e.fields.size > 0).map((e) => this.managedEntry(e.manager, e.operation, e.apiVersion, e.fields, e.subresource, e.time ?? time))
    )
  }

  private commit(
    r: ResourceInfo,
    ns: string,
    name: string,
    type: "ADDED" | "MODIFIED" | "DELETED",
    obj: JsonObject,
    prev: JsonObject | undefined
  ): JsonObject {
    this.rv += 1
    metaOf(obj)["resourceVersion"] = String(this.rv)
    const snapshot = inWireOrder(obj, r)
    if (type === "DELETED") this.bucket(r).delete(okey(ns, name))
    else this.bucket(r).set(okey(ns, name), snapshot)
    const entry: HistoryEntry = { rv: this.rv, resource: r, namespace: ns, type, object: snapshot, prev }
    this.history.push(entry)
    while (this.history.length > this.historySize) {
      const dropped = this.history.shift()
      if (dropped !== undefined) this.compactedRv = dropped.rv
    }
    for (const w of [...this.watchers]) this.deliver(w, entry)
    return clone(snapshot)
  }

  private deliver(w: Watcher, h: HistoryEntry): void {
    if (!w.open || w.stalled || h.resource !== w.resource || h.rv <= w.after) return
    if (w.namespace !== undefined && w.namespace !== "" && h.namespace !== w.namespace) return
    const cur = h.type !== "DELETED" && this.matches(w.resource, h.object, w.namespace, w.labels, w.fields)
    const before = h.prev !== undefined && this.matches(w.resource, h.prev, w.namespace, w.labels, w.fields)
    w.lastRv = h.rv
    if (h.type === "DELETED") {
      if (before || this.matches(w.resource, h.object, w.namespace, w.labels, w.fields)) w.sink.onEvent({ type: "DELETED", object: clone(h.object) })
      return
    }
    if (cur && before) w.sink.onEvent({ type: "MODIFIED", object: clone(h.object) })
    else if (cur) w.sink.onEvent({ type: "ADDED", object: clone(h.object) })
    else if (before && h.prev !== undefined) {
      // left the selector: the watch cache sends DELETED with the previous state at the new resourceVersion
      const gone = clone(h.prev)
      metaOf(gone)["resourceVersion"] = String(h.rv)
      w.sink.onEvent({ type: "DELETED", object: gone })
    }
  }

  private closeWatcher(w: Watcher, notify: boolean): void {
    if (!w.open) return
    w.open = false
    this.watchers.delete(w)
    if (notify) w.sink.onClose()
  }

  private matches(
    r: ResourceInfo,
    o: JsonObject,
    ns: string | undefined,
    labels: LabelSelector,
    fields: FieldSelector
  ): boolean {
    const m = metaOf(o)
    if (r.namespaced && ns !== undefined && ns !== "" && m["namespace"] !== ns) return false
    return matchLabels(labels, labelsOf(o)) && matchFields(fields, (f) => fieldValue(o, f))
  }

  private listItem(r: ResourceInfo, o: JsonObject): JsonObject {
    return this.typedListItem(r, clone(o))
  }

  private typedListItem(r: ResourceInfo, c: JsonObject): JsonObject {
    if (!r.customResource) {
      // typed lists carry no per-item kind/apiVersion
      delete c["kind"]
      delete c["apiVersion"]
    }
    return c
  }

  private bookmarkObject(r: ResourceInfo): JsonObject {
    return {
      kind: r.kind,
      apiVersion: apiVersionOf(r),
      metadata: r.customResource ? { resourceVersion: String(this.rv) } : { resourceVersion: String(this.rv), creationTimestamp: null }
    }
  }
}

interface ManagedEntry {
  manager: string
  operation: string
  apiVersion: string
  fields: Set<string>
  time: string | undefined
  subresource: "status" | undefined
}

/** Group used in Invalid details: built-in kinds use their API group. */
const errGroup = (r: ResourceInfo): string => r.group

const notFoundSubresource = () => failure(404, "NotFound", "the server could not find the requested resource", {})

const topOrder = ["kind", "apiVersion", "metadata"]
const metaOrder = [
  "name",
  "generateName",
  "namespace",
  "uid",
  "resourceVersion",
  "generation",
  "creationTimestamp",
  "deletionTimestamp",
  "deletionGracePeriodSeconds",
  "labels",
  "annotations",
  "ownerReferences",
  "finalizers",
  "managedFields"
]
const ordered = (o: Record<string, unknown>, order: ReadonlyArray<string>): Record<string, unknown> => {
  const out: Record<string, unknown> = {}
  for (const k of order) if (o[k] !== undefined) out[k] = o[k]
  for (const [k, v] of Object.entries(o)) if (!(k in out) && v !== undefined) out[k] = v
  return out
}

const sortedKeys = (v: unknown): unknown => {
  if (Array.isArray(v)) return v.map(sortedKeys)
  if (!isRecord(v)) return v
  const out: Record<string, unknown> = {}
  for (const k of Object.keys(v).sort()) out[k] = sortedKeys(v[k])
  return out
}

/**
 * A copy with keys in the order the server writes them: typed objects in Go struct order (kind,
 * apiVersion, metadata, ...); custom resources are unstructured maps, written with sorted keys.
 */
const inWireOrder = (o: JsonObject, r: ResourceInfo): JsonObject => {
  if (r.customResource) return sortedKeys(clone(o)) as JsonObject
  const c = ordered(clone(o), topOrder)
  if (isRecord(c["metadata"])) c["metadata"] = ordered(c["metadata"], metaOrder)
  return c
}

const withoutResourceVersion = (o: JsonObject): JsonObject => {
  const c = clone(o)
  delete metaOf(c)["resourceVersion"]
  return c
}

const fractionalTime = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})\.\d+(Z|[+-]\d{2}:\d{2})$/

/** metav1.Time in a pod's status (startTime, condition and container state times) keeps whole seconds. */
const truncatePodTimes = (pod: JsonObject): void => {
  const visit = (value: unknown): void => {
    if (Array.isArray(value)) {
      for (const item of value) visit(item)
      return
    }
    if (!isRecord(value)) return
    for (const [key, field] of Object.entries(value)) {
      if (typeof field === "string" && /(Time|At)$/.test(key)) {
        const match = fractionalTime.exec(field)
        if (match !== null) {
          const parsed = new Date(field)
          value[key] = Number.isNaN(parsed.getTime()) ? field : rfc3339(parsed.getTime())
        }
      } else visit(field)
    }
  }
  visit(pod["status"])
}

const withoutVolatile = (o: JsonObject): JsonObject => {
  const c = clone(o)
  const m = metaOf(c)
  delete m["resourceVersion"]
  delete m["managedFields"]
  return c
}

/** The fields of an apply configuration that the applier claims (server-owned metadata dropped). */
const appliedFields = (applied: JsonObject): JsonObject => {
  const c = clone(applied)
  const m = metaOf(c)
  for (const k of Object.keys(m)) if (!["labels", "annotations", "finalizers", "ownerReferences"].includes(k)) delete m[k]
  return c
}

/** Pod spec with the fields an update may change blanked out (image, activeDeadlineSeconds, tolerations, grace). */
const mutableSpec = (spec: Record<string, unknown>): Record<string, unknown> => {
  const c = clone(spec)
  delete c["activeDeadlineSeconds"]
  delete c["tolerations"]
  delete c["terminationGracePeriodSeconds"]
  for (const k of ["containers", "initContainers"]) {
    const list = c[k]
    if (Array.isArray(list)) c[k] = list.map((x) => (isRecord(x) ? { ...x, image: "" } : x))
  }
  return c
}

const fieldValue = (o: JsonObject, field: string): string => {
  const path = field === "source" ? ["source", "component"] : field.split(".")
  const v = getPath(o, path)
  if (typeof v === "boolean") return v ? "true" : "false"
  if (typeof v === "number") return String(v)
  return typeof v === "string" ? v : ""
}

export { NodeInventories, Nodes, Pods, pathKey }
