/**
 * The `store` section: durable commits against a 2000-claim table, next to the floor
 * of the same bytes written by a plain write + fsync + rename + directory fsync loop, and group
 * commit under 64 concurrent committers. Runs in a directory on the same disk as the default
 * state path (never tmpfs), chosen and reported below.
 *
 * A claim's durable cost with its intent (written before the claim is sent, dropped by the row's
 * commit) is measured too: serially (what a lone create waits for beyond the claim itself) and
 * with 64 concurrent claim lives (how many durable writes a claim costs once batches form).
 */
import { randomBytes, randomUUID } from "node:crypto"
import * as NFS from "node:fs/promises"
import * as NPath from "node:path"
import { DateTime, Effect, Layer, Option, Redacted } from "effect"
import * as ClaimsStoreFile from "../src/Layers/ClaimsStoreFile.ts"
import { TestClaimsTable, testSnapshotLayer } from "../testkit/Layers/ClaimsStoreMemory.ts"
import type { ClaimRecord } from "../src/Schemas/Claims.ts"
import { encodeClaimsFile } from "../src/Schemas/ClaimsFile/Encode.ts"
import { testConfig } from "../testkit/Config.ts"
import type { ClaimId, PodKey } from "../src/Schemas/Ids.ts"
import type { BenchSection, Figures } from "./types.ts"

const TABLE_SIZE = 2000
const WARMUP = 20
const ROUNDS = 8
const PER_ROUND = 40
const CONCURRENCY = 64
const COMMITS_PER_FIBER = 50
const TMPFS_MAGIC = 0x01021994

const percentile = (samples: ReadonlyArray<number>, p: number): number => {
  const sorted = [...samples].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!
}
const round1 = (n: number) => Math.round(n * 10) / 10

const nearestExisting = async (path: string): Promise<string> => {
  let dir = path
  while (true) {
    if (await NFS.stat(dir).then(() => true, () => false)) return dir
    const parent = NPath.dirname(dir)
    if (parent === dir) return dir
    dir = parent
  }
}

/** A base directory on the state path's disk, not tmpfs: $VK_BENCH_DIR, /var/tmp, the repo's parent. */
const chooseBaseDir = async () => {
  const stateDir = NPath.dirname(testConfig().statePath)
  const stateDev = (await NFS.stat(await nearestExisting(stateDir))).dev
  const repoParent = NPath.resolve(import.meta.dirname, "../..")
  const candidates = [process.env["VK_BENCH_DIR"], "/var/tmp", repoParent, import.meta.dirname].filter(
    (c): c is string => c !== undefined && c !== ""
  )
  let fallback: { dir: string; fsType: number } | undefined
  for (const dir of candidates) {
    const stat = await NFS.stat(dir).catch(() => undefined)
    if (stat === undefined) continue
    const fsType = (await NFS.statfs(dir)).type
    if (fsType === TMPFS_MAGIC) continue
    if (stat.dev === stateDev) return { dir, fsType, sameDisk: true, stateDir }
    fallback ??= { dir, fsType }
  }
  if (fallback === undefined) throw new Error("no non-tmpfs directory to benchmark in")
  return { ...fallback, sameDisk: false, stateDir }
}

const keyOf = (i: number) => `bench-${i % 16}/sandbox-${i.toString().padStart(7, "0")}` as PodKey
const recordOf = (i: number): ClaimRecord => ({
  id: `sb_${randomBytes(8).toString("hex")}` as ClaimId,
  token: Redacted.make(randomBytes(32).toString("base64url")),
  address: `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}:7777`,
  podUID: randomUUID(),
  claimedAt: Option.some(DateTime.makeUnsafe(Date.UTC(2026, 6, 27) + i * 1000)),
  deadline: Option.some(DateTime.makeUnsafe(Date.UTC(2026, 6, 28) + i * 1000))
})

/** The floor: the same bytes, one durable replace per iteration, no store. */
const floorWrite = async (dir: string, target: string, bytes: Uint8Array, n: number) => {
  const temp = NPath.join(dir, `.floor.tmp-${n}`)
  const file = await NFS.open(temp, "wx", 0o600)
  try {
    await file.writeFile(bytes)
    await file.sync()
  } finally {
    await file.close()
  }
  await NFS.rename(temp, target)
  const d = await NFS.open(dir, "r")
  try {
    await d.sync()
  } finally {
    await d.close()
  }
}

const runStore = (dir: string) =>
  Effect.gen(function*() {
    const statePath = NPath.join(dir, "claims.json")
    let renames = 0
    const ops: ClaimsStoreFile.ClaimsFileOps = {
      ...ClaimsStoreFile.nodeClaimsFileOps,
      rename: (from, to) => {
        renames++
        return ClaimsStoreFile.nodeClaimsFileOps.rename(from, to)
      }
    }
    const store = yield* ClaimsStoreFile.make(statePath, { ops })
    const table = yield* TestClaimsTable
    const records = new Map<PodKey, ClaimRecord>()
    for (let i = 0; i < TABLE_SIZE; i++) {
      const record = recordOf(i)
      records.set(keyOf(i), record)
      yield* table.put(keyOf(i), record)
    }
    yield* store.load
    yield* store.commit(Option.none())

    // One claim's life in the table: the oldest row goes, a fresh tentative claim is committed.
    // The claims to come, made up front: the records are the bench's input, not the store's work,
    // and the serial and concurrent figures must both leave them out.
    const claims = Array.from(
      { length: WARMUP + 2 * ROUNDS * PER_ROUND + 2 * CONCURRENCY * COMMITS_PER_FIBER },
      (_, i) => recordOf(TABLE_SIZE + i)
    )
    let next = TABLE_SIZE
    const claim = Effect.gen(function*() {
      const n = next++
      const key = keyOf(n)
      const record = claims[n - TABLE_SIZE]!
      yield* table.remove(keyOf(n - TABLE_SIZE))
      records.delete(keyOf(n - TABLE_SIZE))
      yield* table.put(key, record, { tentative: true })
      records.set(key, record)
      return key
    })
    const claimAndCommit = Effect.flatMap(claim, (key) => store.commit(Option.some(key)))
    /** The intent of the claim `claim` makes next (its key is known before the claim). */
    const intentOfNext = Effect.map(DateTime.now, (sentAt) => ({ key: keyOf(next), podUID: "bench", sentAt }))
    // A create's durable path with intents: the intent lands, then (the claim answered) the row.
    const intendClaimAndCommit = Effect.gen(function*() {
      yield* store.intend(yield* intentOfNext)
      yield* claimAndCommit
    })
    const timedIntentAndCommit = Effect.gen(function*() {
      const intent = yield* intentOfNext
      const start = performance.now()
      yield* store.intend(intent)
      const intended = performance.now()
      const key = yield* claim
      const committing = performance.now()
      yield* store.commit(Option.some(key))
      return (intended - start + performance.now() - committing) * 1000
    })
    // The latency of the commit alone: the table change (and making up the record) happen before
    // the clock starts; the commit still snapshots, encodes and durably writes the whole table.
    const timedCommit = Effect.gen(function*() {
      const key = yield* claim
      const start = performance.now()
      yield* store.commit(Option.some(key))
      return (performance.now() - start) * 1000
    })

    // Already UTF-8: the floor pays no encoding at all.
    const bytes = Buffer.from(encodeClaimsFile(records))
    const floorTarget = NPath.join(dir, "floor.json")
    let floorN = 0
    const timedFloor = Effect.promise(async () => {
      const start = performance.now()
      await floorWrite(dir, floorTarget, bytes, floorN++)
      return (performance.now() - start) * 1000
    })
    const stringify = () => {
      const plain: Record<string, unknown> = {}
      for (const [k, r] of records) {
        plain[k] = {
          id: r.id,
          token: Redacted.value(r.token),
          address: r.address,
          podUID: r.podUID,
          claimedAt: Option.map(r.claimedAt, DateTime.formatIso),
          deadline: Option.map(r.deadline, DateTime.formatIso)
        }
      }
      const start = performance.now()
      JSON.stringify({ claims: plain })
      return (performance.now() - start) * 1000
    }

    for (let i = 0; i < WARMUP; i++) {
      yield* timedFloor
      yield* timedCommit
    }
    // Alternate blocks so that both see the same disk conditions.
    const commitSamples: Array<number> = []
    const floorSamples: Array<number> = []
    const stringifySamples: Array<number> = []
    for (let round = 0; round < ROUNDS; round++) {
      // Alternate which goes first too, and interleave one by one: disk writeback left behind by
      // one loop must not be charged to the other.
      for (let i = 0; i < PER_ROUND; i++) {
        if ((round + i) % 2 === 0) {
          floorSamples.push(yield* timedFloor)
          commitSamples.push(yield* timedCommit)
        } else {
          commitSamples.push(yield* timedCommit)
          floorSamples.push(yield* timedFloor)
        }
      }
      for (let i = 0; i < 5; i++) stringifySamples.push(stringify())
    }
    const serialSeconds = commitSamples.reduce((a, b) => a + b, 0) / 1e6
    const intentSamples: Array<number> = []
    for (let i = 0; i < ROUNDS * PER_ROUND; i++) intentSamples.push(yield* timedIntentAndCommit)

    const rename0 = renames
    const concurrentStart = performance.now()
    yield* Effect.forEach(
      Array.from({ length: CONCURRENCY }, (_, i) => i),
      () => Effect.repeat(claimAndCommit, { times: COMMITS_PER_FIBER - 1 }),
      { concurrency: "unbounded", discard: true }
    )
    const concurrentSeconds = (performance.now() - concurrentStart) / 1000
    const concurrentCommits = CONCURRENCY * COMMITS_PER_FIBER
    const concurrentWrites = renames - rename0

    const intentRename0 = renames
    yield* Effect.forEach(
      Array.from({ length: CONCURRENCY }, (_, i) => i),
      () => Effect.repeat(intendClaimAndCommit, { times: COMMITS_PER_FIBER - 1 }),
      { concurrency: "unbounded", discard: true }
    )
    const intentWrites = renames - intentRename0

    const fileBytes = (yield* Effect.promise(() => NFS.stat(statePath))).size
    const commitP50 = percentile(commitSamples, 50)
    const floorP50 = percentile(floorSamples, 50)
    const serialPerS = commitSamples.length / serialSeconds
    const concurrentPerS = concurrentCommits / concurrentSeconds
    const figures: Figures = {
      commit_p50_us: round1(commitP50),
      commit_p99_us: round1(percentile(commitSamples, 99)),
      floor_p50_us: round1(floorP50),
      commit_over_floor: Math.round((commitP50 / floorP50) * 100) / 100,
      serial_commits_per_s: round1(serialPerS),
      concurrent64_commits_per_s: round1(concurrentPerS),
      group_commit_gain: Math.round((concurrentPerS / serialPerS) * 10) / 10,
      floor_p99_us: round1(percentile(floorSamples, 99)),
      json_stringify_p50_us: round1(percentile(stringifySamples, 50)),
      concurrent64_writes: concurrentWrites,
      concurrent64_commits_per_write: Math.round((concurrentCommits / concurrentWrites) * 10) / 10,
      claim_with_intent_p50_us: round1(percentile(intentSamples, 50)),
      claim_with_intent_p99_us: round1(percentile(intentSamples, 99)),
      // The intent's share of a create's durable wait, in commits (the budget is one).
      intent_added_commits: Math.round(((percentile(intentSamples, 50) - commitP50) / commitP50) * 100) / 100,
      concurrent64_writes_per_claim: Math.round((concurrentWrites / concurrentCommits) * 100) / 100,
      concurrent64_writes_per_claim_with_intent: Math.round((intentWrites / concurrentCommits) * 100) / 100,
      table_claims: TABLE_SIZE,
      file_bytes: fileBytes,
      samples: commitSamples.length
    }
    return figures
  }).pipe(Effect.scoped, Effect.provide(Layer.fresh(testSnapshotLayer)))

export const storeSection: BenchSection = {
  name: "store",
  run: async () => {
    const base = await chooseBaseDir()
    const dir = await NFS.mkdtemp(NPath.join(base.dir, "vk-sandbox-bench-"))
    try {
      // The bench is a script: this is its edge, where an Effect program is run.
      const figures = await Effect.runPromise(runStore(dir))
      return {
        ...figures,
        dir,
        fs_type: `0x${base.fsType.toString(16)}`,
        same_disk_as_state_path: base.sameDisk
      }
    } finally {
      await NFS.rm(dir, { recursive: true, force: true })
    }
  }
}
