/**
 * Watches on the apiserver model: where a watch starts (the current state as ADDED events, or a
 * replay of history after a resourceVersion, or one ERROR 410 event when that resourceVersion was
 * compacted away), how each committed write fans out to the open watches (an object leaving a
 * watch's selector is a DELETED event for that watch), bookmarks, and the server-side ends (expire
 * with 410, drop as on a restart). Events are delivered synchronously: replayed ones inside `open`,
 * later ones inside the write that caused them.
 */
import { Result } from "effect"
import { clone } from "./Patch.ts"
import type { ResourceInfo } from "./Resources.ts"
import { bookmarkObject, metaOf } from "./Objects.ts"
import { type ListOptions, type Selection, selects } from "./Selectors.ts"
import { type ApiStatusError, badRequest, expired, type JsonObject } from "./Status.ts"
import type { HistoryEntry, ObjectStore } from "./Store.ts"

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

export interface WatchOptions extends ListOptions {
  readonly resourceVersion?: string | undefined
  readonly allowWatchBookmarks?: boolean | undefined
  /** watch-list: the current state as ADDED events, then a BOOKMARK annotated k8s.io/initial-events-end */
  readonly sendInitialEvents?: boolean | undefined
}

/**
 * How a watch that starts at an expired resourceVersion is refused: "event" (the real server's watch
 * cache: 200, then one ERROR event carrying the 410 Expired Status) or "status" (the request itself
 * answered 410).
 */
export type ExpiredWatchStart = "event" | "status"

interface Watcher {
  readonly resource: ResourceInfo
  readonly namespace: string | undefined
  readonly selection: Selection
  readonly bookmarks: boolean
  readonly stalled: boolean
  readonly sink: WatchSink
  open: boolean
  lastRv: number
  /** events at or below this resourceVersion are not delivered */
  readonly after: number
}

export class WatchHub {
  private readonly watchers = new Set<Watcher>()
  private readonly store: ObjectStore
  private readonly expiredWatchStart: ExpiredWatchStart

  constructor(store: ObjectStore, expiredWatchStart: ExpiredWatchStart) {
    this.store = store
    this.expiredWatchStart = expiredWatchStart
  }

  /**
   * Start a watch (authorization and selectors are the caller's). `stalled`: the watch is registered
   * but never gets an event nor a close (a fault the HTTP face can inject).
   */
  open(
    r: ResourceInfo,
    ns: string | undefined,
    options: WatchOptions,
    selection: Selection,
    sink: WatchSink,
    stalled: boolean
  ): Result.Result<WatchHandle, ApiStatusError> {
    const store = this.store
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
    const startError = from !== undefined && from < store.compactedRv
      ? expired(`too old resource version: ${from} (${store.compactedRv})`)
      : undefined
    if (startError !== undefined && this.expiredWatchStart === "status") return Result.fail(startError)
    const w: Watcher = {
      resource: r,
      namespace: r.namespaced ? ns : undefined,
      selection,
      bookmarks: options.allowWatchBookmarks === true,
      stalled,
      sink,
      open: true,
      lastRv: from ?? store.rv,
      after: from ?? store.rv
    }
    const handle: WatchHandle = {
      close: () => this.close(w, false),
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
      for (const [, o] of [...store.bucket(r).entries()].sort(([a], [b]) => (a < b ? -1 : 1))) {
        if (selects(r, o, w.namespace, w.selection)) sink.onEvent({ type: "ADDED", object: clone(o) })
      }
      w.lastRv = store.rv
      if (options.sendInitialEvents === true && w.bookmarks) {
        const end = bookmarkObject(r, store.rv)
        metaOf(end)["annotations"] = { "k8s.io/initial-events-end": "true" }
        sink.onEvent({ type: "BOOKMARK", object: end })
      }
    } else {
      for (const h of store.history) if (h.rv > from) this.deliver(w, h)
    }
    return Result.succeed(handle)
  }

  /** Fan one committed write out to every open watch (the store's listener). */
  publish(entry: HistoryEntry): void {
    for (const w of [...this.watchers]) this.deliver(w, entry)
  }

  /** Send a BOOKMARK to every open watch that asked for bookmarks. */
  bookmark(): void {
    for (const w of [...this.watchers]) this.bookmarkOne(w)
  }

  /** Every open watch gets an ERROR event with a 410 Expired Status and is closed (it fell behind). */
  expire(): void {
    for (const w of [...this.watchers]) {
      if (!w.open) continue
      const e = expired(`too old resource version: ${w.lastRv} (${this.store.rv})`)
      w.sink.onEvent({ type: "ERROR", object: e.body as JsonObject })
      this.close(w, true)
    }
  }

  /** The server closes every open watch without an error (as on an apiserver restart). */
  drop(): void {
    for (const w of [...this.watchers]) this.close(w, true)
  }

  openCount(): number {
    return [...this.watchers].filter((w) => w.open).length
  }

  private bookmarkOne(w: Watcher): void {
    // A bookmark never carries a resourceVersion older than the one the watch started from: a watch
    // from a version the server does not have yet (it went backwards) gets none, as on the real server.
    if (w.open && w.bookmarks && !w.stalled && this.store.rv > w.after) {
      w.lastRv = this.store.rv
      w.sink.onEvent({ type: "BOOKMARK", object: bookmarkObject(w.resource, this.store.rv) })
    }
  }

  private deliver(w: Watcher, h: HistoryEntry): void {
    if (!w.open || w.stalled || h.resource !== w.resource || h.rv <= w.after) return
    if (w.namespace !== undefined && w.namespace !== "" && h.namespace !== w.namespace) return
    const cur = h.type !== "DELETED" && selects(w.resource, h.object, w.namespace, w.selection)
    const before = h.prev !== undefined && selects(w.resource, h.prev, w.namespace, w.selection)
    w.lastRv = h.rv
    if (h.type === "DELETED") {
      if (before || selects(w.resource, h.object, w.namespace, w.selection)) w.sink.onEvent({ type: "DELETED", object: clone(h.object) })
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

  private close(w: Watcher, notify: boolean): void {
    if (!w.open) return
    w.open = false
    this.watchers.delete(w)
    if (notify) w.sink.onClose()
  }
}
