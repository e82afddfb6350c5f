/**
 * The chaos run's plan, a pure function of the seed and the duration: every workload step and
 * every fault, with the time it is due and its parameters. Nothing is chosen while the run goes,
 * so the same seed replays the same choices (when each is carried out still depends on the
 * machine); `planDigest` prints a short fingerprint to compare two runs by.
 */
import { createHash } from "node:crypto"
import { seededRandom } from "../support/Random.ts"

export type DeletePolicy = "Background" | "Foreground" | "Orphan"

export type WorkloadStep =
  /** A Pod of its own (no owner); `ttl` is the lease annotation, 0 = sandboxd's default. */
  | { readonly _tag: "CreateBare"; readonly namespace: string; readonly name: string; readonly ttl: number }
  | { readonly _tag: "DeletePod"; readonly namespace: string; readonly name: string }
  /** A Sandbox and its one Pod (controller reference, blocking the owner's foreground deletion). */
  | { readonly _tag: "CreateSandbox"; readonly namespace: string; readonly name: string; readonly ttl: number }
  /** The Sandbox's Pod made again under the same name, owned by the Sandbox as it is now. */
  | { readonly _tag: "RecreateSandboxPod"; readonly namespace: string; readonly name: string; readonly ttl: number }
  | { readonly _tag: "DeleteSandbox"; readonly namespace: string; readonly name: string; readonly policy: DeletePolicy }
  | { readonly _tag: "CreateReplicaSet"; readonly namespace: string; readonly name: string; readonly replicas: number; readonly ttl: number }
  | { readonly _tag: "DeleteReplicaSet"; readonly namespace: string; readonly name: string; readonly policy: DeletePolicy }
  | { readonly _tag: "CreateNamespace"; readonly namespace: string }
  | { readonly _tag: "DeleteNamespace"; readonly namespace: string }
  /** Bare Pods `<prefix>-000`… created at once (deleted by later DeletePod steps). */
  | { readonly _tag: "Burst"; readonly namespace: string; readonly prefix: string; readonly count: number; readonly ttl: number }

export const faultKinds = [
  "daemon-sigkill",
  "daemon-sigstop",
  "daemon-sigterm",
  "daemon-disk-eio",
  "daemon-disk-enospc",
  "apiserver-restart",
  "etcd-restart",
  "etcd-restore",
  "api-blackhole",
  "api-delay",
  "api-reset",
  "api-halfclose",
  "sandboxd-blackhole",
  "sandboxd-delay",
  "sandboxd-reset",
  "sandboxd-halfclose",
  "sandboxd-restart",
  "sandboxd-slow",
  "sandboxd-5xx",
  "sandboxd-429",
  "sandboxd-invalid",
  "sandboxd-list-cut",
  "sandboxd-list-undecodable",
  "sandboxd-list-fail"
] as const
export type FaultKind = (typeof faultKinds)[number]

/** What a fault occupies: two faults of one resource never overlap. */
export const resourceOf = (kind: FaultKind): string =>
  kind.startsWith("daemon-")
    ? "daemon"
    : kind.startsWith("api-")
    ? "api-path"
    : kind === "apiserver-restart" || kind.startsWith("etcd-")
    ? "control-plane"
    : ["sandboxd-blackhole", "sandboxd-delay", "sandboxd-reset", "sandboxd-halfclose", "sandboxd-restart"].includes(kind)
    ? "sandboxd-path"
    : "sandboxd-replies"

export interface FaultStep {
  readonly kind: FaultKind
  readonly atMs: number
  /** How long the fault holds (a restart's down time; a proxy fault's window; a stop's length). */
  readonly forMs: number
  /** Kind-specific: a delay's millis, a failpoint chain. */
  readonly detail: string
}

/** The backup the restore goes back to: taken at `atMs` (etcd stopped for a moment). */
export interface BackupStep {
  readonly atMs: number
}

export interface Plan {
  readonly seed: number
  readonly durationMs: number
  readonly workload: ReadonlyArray<{ readonly atMs: number; readonly step: WorkloadStep }>
  readonly faults: ReadonlyArray<FaultStep>
  readonly backup: BackupStep | undefined
}

export interface PlanOptions {
  readonly seed: number
  readonly durationMs: number
  /** The daemon's --sandboxd-timeout: "slow" is slower than this. */
  readonly sandboxdTimeoutMs: number
  /** At most this many faults at once (4). */
  readonly maxConcurrentFaults?: number
  /** Pods of one burst. */
  readonly burstSize?: number
}

/** The quiet start before the first fault, and the quiet end before the run stops them all. */
const warmupMs = 15_000
const cooldownMs = 10_000

export const makePlan = (options: PlanOptions): Plan => {
  const random = seededRandom(options.seed)
  const between = (lo: number, hi: number) => Math.floor(lo + random() * (hi - lo))
  const pick = <A>(items: ReadonlyArray<A>): A => items[Math.floor(random() * items.length)]!
  const duration = options.durationMs
  const workload = makeWorkload(duration, options.burstSize ?? 120, between, pick, random)
  const faults = makeFaults(options, between, pick, workload)
  const restore = faults.find((f) => f.kind === "etcd-restore")
  const backup = restore === undefined ? undefined : { atMs: Math.max(warmupMs, Math.floor(restore.atMs / 2)) }
  return { seed: options.seed, durationMs: duration, workload, faults, backup }
}

/** Steady work about every two seconds, and bursts (two, or one every six minutes); nothing in the last 10 s. */
const makeWorkload = (
  duration: number,
  burstSize: number,
  between: (lo: number, hi: number) => number,
  pick: <A>(items: ReadonlyArray<A>) => A,
  random: () => number
) => {
  const steps: Array<{ atMs: number; step: WorkloadStep }> = []
  const add = (atMs: number, step: WorkloadStep) => void steps.push({ atMs, step })
  let nsCount = 0
  const namespaces = ["chaos-a", "chaos-b"]
  for (const namespace of namespaces) add(0, { _tag: "CreateNamespace", namespace })
  const bare = new Map<string, string>() // name -> namespace, alive
  const gone: Array<{ namespace: string; name: string }> = []
  const sandboxes = new Map<string, string>()
  const replicaSets = new Map<string, string>()
  let n = 0
  const ttl = () => (random() < 0.3 ? between(15, 60) : 0)
  const policy = () => pick<DeletePolicy>(["Background", "Foreground", "Orphan"])
  const forget = (map: Map<string, string>, namespace: string) => {
    for (const [name, ns] of map) if (ns === namespace) map.delete(name)
  }
  for (let at = 2_000; at < duration - cooldownMs; at += between(1_000, 3_000)) {
    const namespace = pick(namespaces)
    const roll = random()
    if (roll < 0.22) {
      // Now and then a name used before comes back: the same key, a new Pod.
      const again = gone.length > 0 && random() < 0.4 ? gone.splice(Math.floor(random() * gone.length), 1)[0] : undefined
      const target = again ?? { namespace, name: `bare-${n++}` }
      if (!namespaces.includes(target.namespace)) continue
      bare.set(target.name, target.namespace)
      add(at, { _tag: "CreateBare", namespace: target.namespace, name: target.name, ttl: ttl() })
    } else if (roll < 0.38 && bare.size > 0) {
      const [name, ns] = pick([...bare])
      bare.delete(name)
      gone.push({ namespace: ns, name })
      add(at, { _tag: "DeletePod", namespace: ns, name })
    } else if (roll < 0.55) {
      const name = `sb-${n++}`
      sandboxes.set(name, namespace)
      add(at, { _tag: "CreateSandbox", namespace, name, ttl: ttl() })
    } else if (roll < 0.65 && sandboxes.size > 0) {
      const [name, ns] = pick([...sandboxes])
      add(at, { _tag: "DeletePod", namespace: ns, name })
      add(at + between(2_000, 8_000), { _tag: "RecreateSandboxPod", namespace: ns, name, ttl: ttl() })
    } else if (roll < 0.78 && sandboxes.size > 0) {
      const [name, ns] = pick([...sandboxes])
      sandboxes.delete(name)
      add(at, { _tag: "DeleteSandbox", namespace: ns, name, policy: policy() })
    } else if (roll < 0.86) {
      const name = `rs-${n++}`
      replicaSets.set(name, namespace)
      // ReplicaSets' VMs are never released under the shipped RBAC: short leases end them.
      add(at, { _tag: "CreateReplicaSet", namespace, name, replicas: between(1, 3), ttl: between(20, 60) })
    } else if (roll < 0.93 && replicaSets.size > 0) {
      const [name, ns] = pick([...replicaSets])
      replicaSets.delete(name)
      add(at, { _tag: "DeleteReplicaSet", namespace: ns, name, policy: policy() })
    } else if (roll < 0.95 && at < duration - 60_000) {
      // A namespace goes with everything in it; a fresh one takes its place.
      const victim = pick(namespaces)
      const fresh = `chaos-n${nsCount++}`
      namespaces.splice(namespaces.indexOf(victim), 1, fresh)
      forget(bare, victim)
      forget(sandboxes, victim)
      forget(replicaSets, victim)
      add(at, { _tag: "CreateNamespace", namespace: fresh })
      add(at + 500, { _tag: "DeleteNamespace", namespace: victim })
    }
  }
  // Bursts go to a namespace of their own, never deleted (the others may be gone by then).
  add(0, { _tag: "CreateNamespace", namespace: "chaos-burst" })
  // Two in a short run (at a third and two thirds); one about every six minutes in a long one.
  const bursts = Math.max(2, Math.floor(duration / 360_000))
  for (let i = 0; i < bursts; i++) {
    const at = Math.floor((duration * (i + 1)) / (bursts + 1))
    const namespace = "chaos-burst"
    const prefix = `burst${i}`
    add(at, { _tag: "Burst", namespace, prefix, count: burstSize, ttl: i % 2 === 0 ? 0 : between(30, 90) })
    // Most of each burst goes again a while later; the rest stays to the end.
    for (let k = 0; k < burstSize; k++) {
      const deleteAt = at + between(20_000, 60_000)
      if (random() < 0.7 && deleteAt < duration - cooldownMs) add(deleteAt, { _tag: "DeletePod", namespace, name: `${prefix}-${String(k).padStart(3, "0")}` })
    }
  }
  return steps.sort((a, b) => a.atMs - b.atMs)
}

/** Fault parameters per kind: how long it holds and its detail. */
const faultShape = (
  kind: FaultKind,
  sandboxdTimeoutMs: number,
  between: (lo: number, hi: number) => number
): { forMs: number; detail: string } => {
  switch (kind) {
    case "daemon-sigkill":
      return { forMs: between(0, 3_000), detail: "restart after" }
    case "daemon-sigstop":
      // Longer than the node's grace (20 s) and the watch check (5 s).
      return { forMs: between(22_000, 30_000), detail: "stopped for" }
    case "daemon-sigterm":
      return { forMs: between(0, 2_000), detail: "restart after" }
    case "daemon-disk-eio":
      return { forMs: 10_000, detail: `commit-before-fsync=${between(2, 8)}*off->${between(1, 6)}*errno(EIO)` }
    case "daemon-disk-enospc":
      return { forMs: 10_000, detail: `commit-after-rename=${between(2, 8)}*off->${between(1, 6)}*errno(ENOSPC)` }
    case "apiserver-restart":
    case "etcd-restart":
      return { forMs: between(1_000, 8_000), detail: "down for" }
    case "etcd-restore":
      return { forMs: 0, detail: "to the backup" }
    case "api-delay":
    case "sandboxd-delay":
      return { forMs: between(8_000, 25_000), detail: `${between(200, 2_500)}ms` }
    case "sandboxd-slow":
      return { forMs: between(8_000, 30_000), detail: `${sandboxdTimeoutMs + between(500, 2_000)}ms` }
    case "sandboxd-restart":
      return { forMs: between(1_000, 6_000), detail: "down for" }
    default:
      return { forMs: between(5_000, 25_000), detail: "" }
  }
}

/**
 * Faults drawn from a shuffled deck of every kind (a short run still meets most of them), each at
 * the first moment its resource is free and fewer than the maximum are active; a SIGTERM follows
 * each burst; one restore, in the run's second half (the backup it goes back to is taken halfway
 * to it).
 */
const makeFaults = (
  options: PlanOptions,
  between: (lo: number, hi: number) => number,
  pick: <A>(items: ReadonlyArray<A>) => A,
  workload: ReadonlyArray<{ readonly atMs: number; readonly step: WorkloadStep }>
): Array<FaultStep> => {
  const max = options.maxConcurrentFaults ?? 4
  const end = options.durationMs - cooldownMs
  const faults: Array<FaultStep> = []
  /** The spans each resource is taken (a restart or the restore takes a while beyond its down time). */
  const busy = new Map<string, Array<readonly [number, number]>>()
  const place = (kind: FaultKind, at: number): boolean => {
    const resource = resourceOf(kind)
    const shape = faultShape(kind, options.sandboxdTimeoutMs, between)
    const slack = resource === "control-plane" ? 15_000 : resource === "daemon" ? 8_000 : 2_000
    const span = [at, at + shape.forMs + slack] as const
    const spans = busy.get(resource) ?? []
    if (spans.some(([from, to]) => from < span[1] && span[0] < to)) return false
    const active = faults.filter((f) => f.atMs <= at && f.atMs + f.forMs + 5_000 > at).length
    if (active >= max || at + shape.forMs > end) return false
    faults.push({ kind, atMs: at, ...shape })
    busy.set(resource, [...spans, span])
    return true
  }
  for (const burst of workload.filter((w) => w.step._tag === "Burst")) place("daemon-sigterm", burst.atMs + between(500, 3_000))
  // One restore, in the run's second half, at the first moment the control plane is free.
  for (let at = Math.floor(options.durationMs * (0.55 + 0.15 * (between(0, 100) / 100))); at < end; at += 1_000) {
    if (place("etcd-restore", at)) break
  }
  let deck: Array<FaultKind> = []
  for (let at = warmupMs; at < end; at += between(2_000, 6_000)) {
    // A fresh deck goes under what is left, so a few kinds whose resource is busy never stall the draw.
    if (deck.length < 8) deck = [...shuffle(faultKinds.filter((kind) => kind !== "etcd-restore"), pick), ...deck]
    // The next kind in the deck that can start now (its resource free) takes this moment.
    const next = deck.findLastIndex((kind) => place(kind, at))
    if (next >= 0) deck.splice(next, 1)
  }
  return faults.sort((a, b) => a.atMs - b.atMs)
}

const shuffle = <A>(given: ReadonlyArray<A>, pick: <B>(items: ReadonlyArray<B>) => B): Array<A> => {
  const items = [...given]
  const out: Array<A> = []
  while (items.length > 0) {
    const item = pick(items)
    items.splice(items.indexOf(item), 1)
    out.push(item)
  }
  return out
}

/** A short fingerprint of the plan: equal plans, equal digests. */
export const planDigest = (plan: Plan): string =>
  createHash("sha256").update(JSON.stringify({ workload: plan.workload, faults: plan.faults, backup: plan.backup })).digest("hex").slice(0, 12)
