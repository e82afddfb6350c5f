/**
 * What the chaos run records besides sandboxd's own account (World.ts) and the workload's and
 * nemesis' requests: the apiserver's Pods and owners as an admin watch sees them (relisted after
 * every reconnect, so a restart or a restore shows as a relist), the claims file as read from
 * disk every second, the daemon's decisions from its log lines, and every text the daemon or the
 * cluster shows (Pods, Events, log lines, metrics) searched for sandboxd's tokens.
 */
import * as fs from "node:fs"
import { Effect } from "effect"
import type { Admin } from "./Admin.ts"
import type { History, OwnerRef, PodState } from "./History.ts"

// ---- tokens -------------------------------------------------------------------------------------

/** Every token sandboxd has issued (and its root token): 32 hex digits each. */
export interface TokenScanner {
  readonly add: (token: string) => void
  /** Records a finding when `text` holds a token; counts what it searched. */
  readonly scan: (where: string, what: string, text: string) => void
  readonly scanned: () => number
}

export const makeTokenScanner = (history: History): TokenScanner => {
  const tokens = new Set<string>()
  let count = 0
  return {
    add: (token) => void tokens.add(token),
    scan: (where, what, text) => {
      count++
      for (const match of text.matchAll(/[0-9a-f]{32}/g)) {
        if (tokens.has(match[0])) {
          history.record({ src: "scan", kind: "token", at: Date.now(), where, what })
          return
        }
      }
    },
    scanned: () => count
  }
}

// ---- the apiserver ------------------------------------------------------------------------------

type Json = Record<string, unknown>
const obj = (u: unknown): Json => (typeof u === "object" && u !== null ? (u as Json) : {})
const str = (u: unknown): string => (typeof u === "string" ? u : "")

export const ClaimIdAnnotation = "sandbox.cocoonstack.io/claim-id"

export const podState = (item: unknown): PodState => {
  const metadata = obj(obj(item)["metadata"])
  const spec = obj(obj(item)["spec"])
  const status = obj(obj(item)["status"])
  const refs = Array.isArray(metadata["ownerReferences"]) ? (metadata["ownerReferences"] as Array<unknown>).map(obj) : []
  const controller = refs.find((ref) => ref["controller"] === true)
  const owner: OwnerRef | undefined = controller === undefined
    ? undefined
    : { kind: str(controller["kind"]), name: str(controller["name"]), uid: str(controller["uid"]) }
  return {
    key: `${str(metadata["namespace"])}/${str(metadata["name"])}`,
    uid: str(metadata["uid"]),
    node: str(spec["nodeName"]),
    phase: str(status["phase"]),
    reason: str(status["reason"]),
    deleting: metadata["deletionTimestamp"] !== undefined && metadata["deletionTimestamp"] !== null,
    claimId: str(obj(metadata["annotations"])[ClaimIdAnnotation]),
    owner
  }
}

export const ownerState = (item: unknown) => {
  const metadata = obj(obj(item)["metadata"])
  return {
    uid: str(metadata["uid"]),
    key: `${str(metadata["namespace"])}/${str(metadata["name"])}`,
    deleting: metadata["deletionTimestamp"] !== undefined && metadata["deletionTimestamp"] !== null
  }
}

/** What the run watches: Pods, the two owner kinds, and Events (only searched for tokens). */
export const watched = [
  { resource: "pods", path: "/api/v1/pods" },
  { resource: "Sandbox", path: "/apis/agents.x-k8s.io/v1beta1/sandboxes" },
  { resource: "ReplicaSet", path: "/apis/apps/v1/replicasets" },
  { resource: "events", path: "/api/v1/events" }
] as const

/**
 * One resource, listed then watched, again and again: each list records which UIDs exist (and,
 * against the last state seen, the objects that vanished or changed meanwhile); each watch event
 * a change. Runs until interrupted.
 */
export const watchResource = (admin: Admin, history: History, tokens: TokenScanner, target: (typeof watched)[number]) =>
  Effect.gen(function*() {
    /** uid → the state last recorded of it (its JSON, to record only changes). */
    const last = new Map<string, string>()
    const put = (event: string, state: PodState | ReturnType<typeof ownerState>) => {
      const summary = JSON.stringify(state)
      if (event !== "DELETED" && event !== "VANISHED" && last.get(state.uid) === summary) return
      if (event === "DELETED" || event === "VANISHED") last.delete(state.uid)
      else last.set(state.uid, summary)
      const at = Date.now()
      if ("phase" in state) history.record({ src: "apiserver", kind: "pod", at, event, ...state })
      else history.record({ src: "apiserver", kind: "owner", at, event, ownerKind: target.resource, ...state })
    }
    const note = (event: string, item: unknown, raw: string) => {
      const metadata = obj(obj(item)["metadata"])
      tokens.scan(target.resource, `${event} ${str(metadata["namespace"])}/${str(metadata["name"])}`, raw)
      if (target.resource === "events") return
      put(event, target.resource === "pods" ? podState(item) : ownerState(item))
    }
    while (true) {
      const list = yield* admin.request("GET", target.path)
      if (list.status !== 200) {
        yield* Effect.sleep("1 second")
        continue
      }
      const items = Array.isArray(obj(list.body)["items"]) ? (obj(list.body)["items"] as Array<unknown>) : []
      const resourceVersion = str(obj(obj(list.body)["metadata"])["resourceVersion"])
      const present = new Set<string>()
      for (const item of items) {
        present.add(str(obj(obj(item)["metadata"])["uid"]))
        note("LISTED", item, JSON.stringify(item))
      }
      if (target.resource !== "events") {
        history.record({ src: "apiserver", kind: "relist", at: Date.now(), resource: target.resource, uids: [...present] })
        // Gone while no watch ran (or taken away by a restore): recorded as it was last seen.
        for (const [uid, summary] of [...last]) if (!present.has(uid)) put("VANISHED", JSON.parse(summary) as PodState)
      }
      yield* admin.stream(`${target.path}?watch=1&allowWatchBookmarks=true&timeoutSeconds=60&resourceVersion=${resourceVersion}`, (line) => {
        const event = obj(JSON.parse(line))
        const type = str(event["type"])
        if (type === "ADDED" || type === "MODIFIED" || type === "DELETED") note(type, event["object"], line)
      })
      yield* Effect.sleep("200 millis")
    }
  })

// ---- the claims file ----------------------------------------------------------------------------

/** Reads the claims file every second; each row and intent that appeared or went is recorded, then the read. */
export const sampleClaimsFile = (statePath: string, history: History) =>
  Effect.gen(function*() {
    let rows = new Map<string, { id: string; token: string; owner: string }>()
    let intents = new Set<string>()
    while (true) {
      const at = Date.now()
      let text: string | undefined
      try {
        text = fs.readFileSync(statePath, "utf8")
      } catch {
        text = undefined
      }
      const until = Date.now()
      let parsed: Json | undefined
      try {
        parsed = text === undefined ? {} : obj(JSON.parse(text))
      } catch {
        parsed = undefined // never expected: the file is replaced by a rename
      }
      if (parsed !== undefined) {
        const nextRows = new Map(Object.entries(obj(parsed["claims"])).map(([key, row]) => [key, rowOf(row)]))
        const nextIntents = new Set(Object.keys(obj(parsed["intents"])))
        let changed = false
        for (const [key, row] of nextRows) {
          const before = rows.get(key)
          if (before?.id === row.id && before.token === row.token && before.owner === row.owner) continue
          changed = true
          history.record({ src: "file", kind: "row", at, key, ...row, present: true })
        }
        for (const [key, row] of rows) {
          if (nextRows.has(key)) continue
          changed = true
          history.record({ src: "file", kind: "row", at, key, id: row.id, token: row.token, present: false })
        }
        for (const key of nextIntents) if (!intents.has(key)) history.record({ src: "file", kind: "intent", at, key, present: true })
        for (const key of intents) if (!nextIntents.has(key)) history.record({ src: "file", kind: "intent", at, key, present: false })
        changed = changed || nextIntents.size !== intents.size || [...nextIntents].some((k) => !intents.has(k))
        rows = nextRows
        intents = nextIntents
        history.record({ src: "file", kind: "sample", at, until, changed })
      }
      yield* Effect.sleep("1 second")
    }
  })

/**
 * A row as the checker reads it: its claim, its token, and the owner it waits on (AUTH-9 — a
 * preserved VM is released once its owner goes; "" for none).
 */
const rowOf = (row: unknown) => ({ id: str(obj(row)["id"]), token: str(obj(row)["token"]), owner: str(obj(obj(row)["owner"])["uid"]) })

/** The claims file now: rows and intents (empty when there is no file). */
export const readClaimsFile = (statePath: string) => {
  try {
    const parsed = obj(JSON.parse(fs.readFileSync(statePath, "utf8")))
    return {
      rows: Object.entries(obj(parsed["claims"])).map(([key, row]) => ({ key, ...rowOf(row) })),
      intents: Object.keys(obj(parsed["intents"]))
    }
  } catch {
    return { rows: [], intents: [] }
  }
}

// ---- the daemon's lines -------------------------------------------------------------------------

/** The daemon's lines the checker reads (its decisions, its lists of the Pods) and every line searched for tokens. */
export const daemonLine = (history: History, tokens: TokenScanner) => (line: string, incarnation: number) => {
  tokens.scan("log", `incarnation ${incarnation}`, line)
  let record: Json
  try {
    record = obj(JSON.parse(line))
  } catch {
    return
  }
  const msg = str(record["msg"])
  const level = str(record["level"])
  const relisted = msg === "pod controller synced" || msg.includes("went backwards") || msg.includes("relisting")
  if (!(relisted || msg.includes("release") || msg.includes("returned") || msg.includes("preserv") || msg.includes("lease") || level === "error")) return
  history.record({
    src: "daemon",
    kind: "log",
    at: Date.parse(str(record["time"])) || Date.now(),
    incarnation,
    level,
    msg,
    pod: str(record["pod"]),
    claim: str(record["claim"]),
    verdict: str(record["verdict"])
  })
}
