/**
 * In-memory Kubernetes API server model: the state machine behind the HTTP face (`Server.ts`) and
 * the in-memory KubeApi test layer. Plain synchronous TypeScript over JSON objects; every operation
 * returns `Result<A, ApiStatusError>` carrying the exact `Status` body and HTTP code kube-apiserver
 * would answer. Each request runs through the real server's steps in its order (docs/development.md,
 * "What the apiserver simulator models"); the rules live beside it (`Store.ts`, `Watches.ts`,
 * `Validation.ts`, `Update.ts`, `Deletion.ts`, `Pods.ts`, `Apply.ts`, `Controllers.ts`, …). Times
 * come from the injected `now`.
 */
import { Result } from "effect"
import { appliedFields, applyRequest, firstApplied, mergeApply } from "./Apply.ts"
import { collectGarbage, finalizeNamespace, nodeLifecycle } from "./Controllers.ts"
import { goesNow, markForDeletion, preconditionConflict, type DeleteOptions, type DeleteResult } from "./Deletion.ts"
import { type DenyRule, DenyList, type FailureRule, type Faults, noFaults } from "./Faults.ts"
import { leafPaths, pathKey, sameValue } from "./Fields.ts"
import { prepareForCreate, terminatingNamespace } from "./Kinds.ts"
import { type ManagedEntry, managedEntry, recordManager, setManagedFields } from "./ManagedFields.ts"
import { finalizersOf, listItem, listKind, metaOf, objectKey, randomSuffix, rfc3339, str, withoutResourceVersion } from "./Objects.ts"
import { type ListBody, listPage, listPageBody, type PageOptions } from "./Paging.ts"
import { clone, isRecord, jsonMergePatch, jsonPatch, strategicMerge } from "./Patch.ts"
import { bindPod, isIP, truncatePodTimes } from "./Pods.ts"
import {
  AllResources,
  apiVersionOf,
  findResource,
  Namespaces,
  NodeInventories,
  Nodes,
  Pods,
  registryKey,
  type ResourceInfo
} from "./Resources.ts"
import { type ListOptions, parseSelection, selects, selectsAll } from "./Selectors.ts"
import {
  alreadyExists,
  type ApiStatusError,
  badRequest,
  failure,
  invalid,
  type JsonObject,
  notFound,
  plainServerError,
  staleConflict,
  success,
  uidPreconditionConflict
} from "./Status.ts"
import { type HistoryEntry, type ModelSnapshot, ObjectStore } from "./Store.ts"
import { updatedObject, updatePreconditions } from "./Update.ts"
import {
  admitNamespace,
  checkKind,
  decodeCheck,
  errGroup,
  microTimeError,
  notFoundSubresource,
  validate,
  validateName
} from "./Validation.ts"
import { type ExpiredWatchStart, type WatchHandle, WatchHub, type WatchOptions, type WatchSink } from "./Watches.ts"

export type { DeleteOptions, DeleteResult } from "./Deletion.ts"
export type { DenyRule, FailureRule, Faults } from "./Faults.ts"
export type { PageOptions } from "./Paging.ts"
export type { ListOptions } from "./Selectors.ts"
export type { ModelSnapshot } from "./Store.ts"
export type { WatchEvent, WatchEventType, WatchHandle, WatchOptions, WatchSink } from "./Watches.ts"
export { isIP, microTimeError, NodeInventories, Nodes, pathKey, Pods, rfc3339 }

export type Outcome<A> = Result.Result<A, ApiStatusError>

export interface WriteOptions {
  readonly fieldManager?: string | undefined
}

export type PatchType = "strategic" | "merge" | "json" | "apply"

export interface PatchOptions extends WriteOptions {
  readonly subresource?: "status" | undefined
  readonly force?: boolean | undefined
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
  readonly expiredWatchStart?: ExpiredWatchStart
  /** the user named in Forbidden messages */
  readonly user?: string
  /**
   * Accept a pod PUT without resourceVersion; default true, as kube-apiserver v1.37.2 does. false models
   * a server that answers such a PUT with 422.
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

/** Keys in store order (the order lists and collection deletes go through). */
const byKey = ([a]: readonly [string, JsonObject], [b]: readonly [string, JsonObject]) => (a < b ? -1 : a > b ? 1 : 0)

export class ClusterModel {
  readonly resources: ReadonlyArray<ResourceInfo>
  readonly faults: Faults = noFaults()
  readonly user: string
  private readonly now: () => number
  private readonly newUid: () => string
  readonly expiredWatchStart: ExpiredWatchStart
  private readonly unconditionalPodUpdates: boolean
  private readonly nodeNotReadyTaint: boolean
  private readonly createOnUpdate: boolean
  private readonly store: ObjectStore
  private readonly watches: WatchHub
  private readonly denied: DenyList

  constructor(options: ModelOptions = {}) {
    this.resources = AllResources
    this.now = options.now ?? Date.now
    this.newUid = options.newUid ?? (() => crypto.randomUUID())
    this.expiredWatchStart = options.expiredWatchStart ?? "event"
    this.user = options.user ?? "system:serviceaccount:vk-sandbox:vk-sandbox"
    this.unconditionalPodUpdates = options.unconditionalPodUpdates ?? true
    this.nodeNotReadyTaint = options.nodeNotReadyTaint ?? false
    this.createOnUpdate = options.createOnUpdate ?? true
    this.store = new ObjectStore(options.historySize ?? 1000, (entry: HistoryEntry) => this.watches.publish(entry))
    this.watches = new WatchHub(this.store, this.expiredWatchStart)
    this.denied = new DenyList(this.user)
    for (const ns of options.namespaces ?? ["default", "kube-system", "kube-public", "kube-node-lease"]) {
      this.create(Namespaces, "", { apiVersion: "v1", kind: "Namespace", metadata: { name: ns } }, { fieldManager: "kube-apiserver" })
    }
  }

  // ---------------------------------------------------------------- test helpers

  /** The global resourceVersion counter (the last one handed out). */
  get resourceVersion(): string {
    return String(this.store.rv)
  }

  resourceFor(group: string, version: string, plural: string): ResourceInfo | undefined {
    return findResource(this.resources, group, version, plural)
  }

  /** Refuse verb on resource with 403 Forbidden, as RBAC would. */
  deny(rule: DenyRule): void {
    this.denied.add(rule)
  }

  clearDenies(): void {
    this.denied.clear()
  }

  /** A copy of the stored object, or undefined (no authorization, no semantics). */
  peek(r: ResourceInfo, ns: string, name: string): JsonObject | undefined {
    const o = this.store.lookup(r, r.namespaced ? ns : "", name)
    return o === undefined ? undefined : clone(o)
  }

  /** Store an object as is, bumping the resourceVersion and notifying watchers; no validation, no admission. */
  put(r: ResourceInfo, obj: JsonObject): JsonObject {
    const o = clone(obj)
    const m = metaOf(o)
    const ns = r.namespaced ? str(m["namespace"]) ?? "default" : ""
    const name = str(m["name"]) ?? ""
    if (r.namespaced) m["namespace"] = ns
    const prev = this.store.lookup(r, ns, name)
    if (m["uid"] === undefined) m["uid"] = prev === undefined ? this.newUid() : metaOf(prev)["uid"]
    if (m["creationTimestamp"] === undefined) m["creationTimestamp"] = rfc3339(this.now())
    return this.store.commit(r, ns, name, prev === undefined ? "ADDED" : "MODIFIED", o, prev)
  }

  /** Remove an object at once (finalizers and grace ignored), with a DELETED event. */
  remove(r: ResourceInfo, ns: string, name: string): boolean {
    const namespace = r.namespaced ? ns : ""
    const o = this.store.lookup(r, namespace, name)
    if (o === undefined) return false
    this.store.commit(r, namespace, name, "DELETED", clone(o), o)
    return true
  }

  /**
   * One pass of the garbage collector (a controller, not the apiserver; here on demand): every object whose
   * owners are all gone is deleted in the background way, so a bound pod gets its graceful deletion.
   * Returns the keys (`resource/namespace/name`) it deleted.
   */
  collectGarbage(): Array<string> {
    return collectGarbage(this.resources, this.store, (r, ns, name) => this.deleteOne(r, ns, name, {}))
  }

  /** Send a BOOKMARK to every open watch that asked for bookmarks. */
  bookmark(): void {
    this.watches.bookmark()
  }

  /** Every open watch gets an ERROR event with a 410 Expired Status and is closed (it fell behind). */
  expireWatches(): void {
    this.watches.expire()
  }

  /** The server closes every open watch without an error (as on an apiserver restart). */
  dropWatches(): void {
    this.watches.drop()
  }

  /** Forget all history: a watch from any resourceVersion before now gets 410. */
  compact(): void {
    this.store.compact()
  }

  /** The stored objects and the resourceVersion counter, to `restore` later (an etcd backup). */
  snapshot(): ModelSnapshot {
    return this.store.snapshot()
  }

  /**
   * The server restarts on a restored backup (or on an empty store: a snapshot taken at the start):
   * objects and the resourceVersion counter go back to the snapshot, history is gone, and every
   * open watch is closed as by a restart. A resourceVersion handed out since is then from the future.
   */
  restore(snapshot: ModelSnapshot): void {
    this.dropWatches()
    this.store.restore(snapshot)
  }

  openWatches(): number {
    return this.watches.openCount()
  }

  // ---------------------------------------------------------------- reads

  get(r: ResourceInfo, ns: string, name: string): Outcome<JsonObject> {
    const denied = this.denied.authorize("get", r, undefined, ns, name)
    if (denied !== undefined) return Result.fail(denied)
    const o = this.store.lookup(r, r.namespaced ? ns : "", name)
    return o === undefined ? Result.fail(notFound(r, name)) : Result.succeed(clone(o))
  }

  list(r: ResourceInfo, ns: string | undefined, options: ListOptions & PageOptions = {}): Outcome<JsonObject> {
    return Result.flatMap(this.selectForList(r, ns, options), ({ selected, unselective }) =>
      listPage(r, selected, options, this.store.rv, this.store.compactedRv, unselective))
  }

  /**
   * The same list as `list`, in the pieces the server writes it in (no copy of the objects): the
   * state now, however much later the items are written.
   */
  listBody(r: ResourceInfo, ns: string | undefined, options: ListOptions & PageOptions = {}): Outcome<ListBody> {
    return Result.flatMap(this.selectForList(r, ns, options), ({ selected, unselective }) =>
      listPageBody(r, selected, options, this.store.rv, this.store.compactedRv, unselective))
  }

  private selectForList(
    r: ResourceInfo,
    ns: string | undefined,
    options: ListOptions
  ): Outcome<{ readonly selected: ReadonlyArray<readonly [string, JsonObject]>; readonly unselective: boolean }> {
    const denied = this.denied.authorize("list", r, undefined, ns, undefined)
    if (denied !== undefined) return Result.fail(denied)
    const selection = parseSelection(r, options)
    if (Result.isFailure(selection)) return Result.fail(selection.failure)
    const selected: Array<readonly [string, JsonObject]> = []
    for (const entry of this.store.bucket(r)) if (selects(r, entry[1], ns, selection.success)) selected.push(entry)
    selected.sort(byKey)
    return Result.succeed({ selected, unselective: selectsAll(selection.success) })
  }

  watch(r: ResourceInfo, ns: string | undefined, options: WatchOptions, sink: WatchSink): Outcome<WatchHandle> {
    const denied = this.denied.authorize("watch", r, undefined, ns, undefined)
    if (denied !== undefined) return Result.fail(denied)
    const selection = parseSelection(r, options)
    if (Result.isFailure(selection)) return Result.fail(selection.failure)
    return this.watches.open(r, ns, options, selection.success, sink, this.faults.stallWatches)
  }

  // ---------------------------------------------------------------- writes

  create(r: ResourceInfo, ns: string, body: unknown, options: WriteOptions = {}): Outcome<JsonObject> {
    // the real order: authorization, decoding, admission (NamespaceLifecycle), validation, storage
    const namespace = r.namespaced ? ns : ""
    const denied = this.denied.authorize("create", r, undefined, namespace, undefined)
    if (denied !== undefined) return Result.fail(denied)
    if (!isRecord(body)) return Result.fail(badRequest("the body of the request could not be decoded as an object"))
    const obj: JsonObject = clone(body)
    const m = metaOf(obj)
    const kindCheck = checkKind(r, obj)
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
    const decode = decodeCheck(r, obj)
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
    const nameErr = validateName(r, name)
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
    prepareForCreate(r, obj, this.nodeNotReadyTaint)
    const errs = validate(r, obj, undefined)
    if (errs !== undefined) return Result.fail(errs)
    // storage: a resourceVersion on a new object is a plain error there (500 InternalError), then the key check
    if (givenRv !== undefined && givenRv !== "" && givenRv !== "0") {
      return Result.fail(plainServerError("resourceVersion should not be set on objects to be created"))
    }
    if (this.store.lookup(r, namespace, name) !== undefined) return Result.fail(alreadyExists(r, name))
    recordManager(obj, undefined, options.fieldManager, "Update", undefined, this.now)
    const created = this.store.commit(r, namespace, name, "ADDED", obj, undefined)
    if (r === Nodes && this.nodeNotReadyTaint) nodeLifecycle(this.store, name, this.now)
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
    const denied = this.denied.authorize("patch", r, sub, ns, name)
    if (denied !== undefined) return Result.fail(denied)
    const namespace = r.namespaced ? ns : ""
    const stored = this.store.lookup(r, namespace, name)
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
    const denied = this.denied.authorize("delete", r, undefined, ns, name)
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
    const denied = this.denied.authorize("deletecollection", r, undefined, ns, undefined)
    if (denied !== undefined) return Result.fail(denied)
    const selection = parseSelection(r, selectors)
    if (Result.isFailure(selection)) return Result.fail(selection.failure)
    const targets = [...this.store.bucket(r).entries()]
      .sort(byKey)
      .map(([, o]) => o)
      .filter((o) => selects(r, o, ns, selection.success))
    // the answer is the list taken before deleting (kube-apiserver v1.37.2): items as they were, its resourceVersion
    const listed = { kind: listKind(r), apiVersion: apiVersionOf(r), metadata: { resourceVersion: String(this.store.rv) }, items: targets.map((o) => listItem(r, o)) }
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
    const denied = this.denied.authorize("create", Pods, "binding", ns, name)
    if (denied !== undefined) return Result.fail(denied)
    const stored = this.store.lookup(Pods, ns, name)
    if (stored === undefined) return Result.fail(notFound(Pods, name))
    const bound = bindPod(stored, name, nodeName)
    if (bound._tag === "Refused") return Result.fail(bound.error)
    this.store.commit(Pods, ns, name, "MODIFIED", bound.pod, stored)
    return Result.succeed({ kind: "Status", apiVersion: "v1", metadata: {}, status: "Success", code: 201 })
  }

  /** The namespace controller's job: remove everything in the namespace, then the namespace. */
  finalizeNamespace(name: string): void {
    finalizeNamespace(this.resources, this.store, name)
  }

  // ---------------------------------------------------------------- internals

  private admitNamespace(r: ResourceInfo, ns: string, name: string): ApiStatusError | undefined {
    return admitNamespace(r, r.namespaced ? this.store.lookup(Namespaces, "", ns) : undefined, ns, name)
  }

  private deleteOne(r: ResourceInfo, ns: string, name: string, options: DeleteOptions): Outcome<DeleteResult> {
    const namespace = r.namespaced ? ns : ""
    const stored = this.store.lookup(r, namespace, name)
    if (stored === undefined) return Result.fail(notFound(r, name))
    const uid = str(metaOf(stored)["uid"]) ?? ""
    const refused = preconditionConflict(r, name, stored, options.preconditions)
    if (refused !== undefined) return Result.fail(refused)
    if (r === Namespaces) {
      const next = terminatingNamespace(stored, this.now())
      return Result.succeed({
        _tag: "Pending",
        object: next === undefined ? clone(stored) : this.store.commit(Namespaces, "", name, "MODIFIED", next, stored)
      })
    }
    const mark = markForDeletion(r, stored, options.gracePeriodSeconds, this.now)
    if (mark._tag === "Unchanged") return Result.succeed({ _tag: "Pending", object: clone(stored) })
    let current = stored
    let markedObject: JsonObject | undefined
    if (mark._tag === "Marked") {
      markedObject = this.store.commit(r, namespace, name, "MODIFIED", mark.next, stored)
      current = this.store.lookup(r, namespace, name) ?? stored
    }
    if (!goesNow(current)) return Result.succeed({ _tag: "Pending", object: markedObject ?? clone(stored) })
    const deleted = this.store.commit(r, namespace, name, "DELETED", clone(current), current)
    return Result.succeed({
      _tag: "Deleted",
      object: deleted,
      body: r.returnDeletedObject ? deleted : success(r, name, uid)
    })
  }

  /** Server-side apply: the first apply creates the object; a later one merges (`Apply.ts`) and is stored as an update. */
  private apply(
    r: ResourceInfo,
    ns: string,
    name: string,
    body: unknown,
    options: PatchOptions
  ): Outcome<{ readonly object: JsonObject; readonly created: boolean }> {
    const request = applyRequest(r, name, options.fieldManager, body)
    if (Result.isFailure(request)) return Result.fail(request.failure)
    const applied = request.success
    const manager = options.fieldManager ?? ""
    const namespace = r.namespaced ? ns : ""
    const stored = this.store.lookup(r, namespace, name)
    if (stored === undefined) {
      // the first apply creates the object
      const created = firstApplied(r, applied, name, namespace)
      const cm = metaOf(created)
      const denied = this.denied.authorize("patch", r, options.subresource, namespace, name)
      if (denied !== undefined) return Result.fail(denied)
      const nameErr = validateName(r, name)
      if (nameErr !== undefined) return Result.fail(nameErr)
      const admitted = this.admitNamespace(r, namespace, name)
      if (admitted !== undefined) return Result.fail(admitted)
      cm["uid"] = this.newUid()
      cm["creationTimestamp"] = rfc3339(this.now())
      if (r.tracksGeneration) cm["generation"] = 1
      prepareForCreate(r, created, this.nodeNotReadyTaint)
      const errs = validate(r, created, undefined)
      if (errs !== undefined) return Result.fail(errs)
      setManagedFields(created, [
        managedEntry(manager, "Apply", apiVersionOf(r), leafPaths(appliedFields(applied)), options.subresource, this.now)
      ])
      return Result.succeed({ object: this.store.commit(r, namespace, name, "ADDED", created, undefined), created: true })
    }
    const denied = this.denied.authorize("patch", r, options.subresource, namespace, name)
    if (denied !== undefined) return Result.fail(denied)
    const merged = mergeApply(r, stored, applied, manager, options)
    if (Result.isFailure(merged)) return Result.fail(merged.failure)
    const result = this.replace(r, ns, name, merged.success.next, options.subresource, {}, stored, merged.success.entries)
    return Result.map(result, (object) => ({ object, created: false }))
  }

  /**
   * PUT (and the final step of PATCH and apply). `patchedFrom` is the stored object a patch was computed
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
      const denied = this.denied.authorize("update", r, sub, ns, name)
      if (denied !== undefined) return Result.fail(denied)
    }
    const obj: JsonObject = clone(body)
    const kindCheck = checkKind(r, obj)
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
    const decode = decodeCheck(r, obj)
    if (decode !== undefined) return Result.fail(decode)
    const stored = this.store.lookup(r, namespace, name)
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
    // A patch has no storage precondition of its own: a uid it sets that is not the stored one is
    // refused by validation, as a change of an immutable field (422, never the PUT's 409).
    const patchedUid = patchedFrom === undefined ? undefined : str(m["uid"])
    if (patchedUid !== undefined && patchedUid !== (str(metaOf(stored)["uid"]) ?? "")) {
      return Result.fail(invalid(r.group, r.kind, name, [
        { field: "metadata.uid", type: "FieldValueInvalid", value: JSON.stringify(patchedUid), detail: "field is immutable" }
      ]))
    }
    const refused = updatePreconditions(r, name, namespace, obj, stored, this.unconditionalPodUpdates)
    if (refused !== undefined) return Result.fail(refused)
    const next = updatedObject(r, name, namespace, obj, stored, sub)
    const nm = metaOf(next)
    const errs = validate(r, next, stored)
    if (errs !== undefined) return Result.fail(errs)
    if (entries !== undefined) {
      const time = rfc3339(this.now())
      setManagedFields(next, entries.filter((e) => e.fields.size > 0).map((e) =>
        managedEntry(e.manager, e.operation, e.apiVersion, e.fields, e.subresource, this.now, e.time ?? time)
      ))
    } else {
      recordManager(next, stored, options.fieldManager, "Update", sub, this.now)
    }
    // A pod's times are stored at whole seconds (metav1.Time); the manager's bookkeeping above saw
    // the request's own values, so a time sent with a fraction counts as a change of that field
    // and moves the manager's managedFields time, although the stored status ends up the same.
    if (r === Pods) truncatePodTimes(next)
    // no-op: no new resourceVersion, no event. The comparison includes managedFields, as the real
    // server compares the whole object it would store.
    if (sameObject(next, stored)) return Result.succeed(clone(stored))
    const dgp = nm["deletionGracePeriodSeconds"]
    if (nm["deletionTimestamp"] !== undefined && finalizersOf(next).length === 0 && finalizersOf(stored).length > 0 && dgp === 0) {
      // the last finalizer was removed from an object marked for deletion: it goes now
      return Result.succeed(this.store.commit(r, namespace, name, "DELETED", next, stored))
    }
    const written = this.store.commit(r, namespace, name, "MODIFIED", next, stored)
    if (r === Nodes && this.nodeNotReadyTaint) nodeLifecycle(this.store, name, this.now)
    return Result.succeed(written)
  }
}

/** Equal but for the resourceVersion (a write that changes nothing else is a no-op). */
const sameObject = (a: JsonObject, b: JsonObject): boolean => sameValue(withoutResourceVersion(a), withoutResourceVersion(b))
