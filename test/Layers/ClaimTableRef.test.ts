import { assert, describe, it } from "@effect/vitest"
import type { V1Pod } from "@kubernetes/client-node"
import { DateTime, Effect, Option, Redacted } from "effect"
import { ClaimTableRefLayer } from "../../src/Layers/ClaimTableRef.ts"
import type { ClaimRecord } from "../../src/Schemas/Claims.ts"
import type { ClaimId, PodKey } from "../../src/Schemas/Ids.ts"
import { ClaimsSnapshot } from "../../src/Services/ClaimsStore.ts"
import { ClaimDoubts } from "../../src/Services/ClaimDoubts.ts"
import { ClaimTable, type ClaimTableState } from "../../src/Services/ClaimTable.ts"
import { KnownSecrets } from "../../src/Services/KnownSecrets.ts"

const key = (name: string) => `ns/${name}` as PodKey
const rec = (id: string, deadline?: number): ClaimRecord => ({
  id: id as ClaimId,
  token: Redacted.make(`t-${id}`),
  address: "",
  podUID: "u0",
  claimedAt: Option.none(),
  deadline: deadline === undefined ? Option.none() : Option.some(DateTime.makeUnsafe(deadline))
})
const pod = (name: string, uid: string): V1Pod => ({ metadata: { namespace: "ns", name, uid }, spec: { containers: [] } })

const run = <A, E>(effect: Effect.Effect<A, E, ClaimTable | ClaimsSnapshot | KnownSecrets | ClaimDoubts>) =>
  effect.pipe(Effect.provide(ClaimTableRefLayer, { local: true }))

describe("ClaimTable (Ref layer)", () => {
  it.effect("KnownSecrets: the token of every row, quarantined, tentative and durable, as the table holds them now", () =>
    run(Effect.gen(function*() {
      const table = yield* ClaimTable
      const snapshot = yield* ClaimsSnapshot
      const secrets = yield* KnownSecrets
      const known = Effect.map(secrets.current, (tokens) => tokens.map((t) => Redacted.value(t)).sort())
      assert.deepStrictEqual(yield* known, [])
      yield* table.loadQuarantined(new Map([[key("q"), rec("sb_q")]]))
      yield* table.recordTentative(key("a"), rec("sb_a"), pod("a", "ua"))
      yield* table.recordTentative(key("d"), rec("sb_d"), pod("d", "ud"))
      yield* snapshot.landed(new Map([[key("d"), "sb_d" as ClaimId]]))
      assert.deepStrictEqual(yield* known, ["t-sb_a", "t-sb_d", "t-sb_q"])
      // Handed out still Redacted: nothing logs them in plain text by accident.
      assert.isTrue((yield* secrets.current).every((t) => Redacted.isRedacted(t)))
      yield* table.dropClaim(key("q"), "sb_q" as ClaimId)
      assert.deepStrictEqual(yield* known, ["t-sb_a", "t-sb_d"])
    })))

  it.effect("rowsForWrite: durable and quarantined rows always, tentative rows only in their own commit (PER-6)", () =>
    run(Effect.gen(function*() {
      const table = yield* ClaimTable
      const snapshot = yield* ClaimsSnapshot
      yield* table.loadQuarantined(new Map([[key("q"), rec("sb_q")]]))
      yield* table.recordTentative(key("a"), rec("sb_a"), pod("a", "ua"))
      yield* table.recordTentative(key("b"), rec("sb_b"), pod("b", "ub"))
      const forA = yield* snapshot.rowsForWrite(new Set([key("a")]))
      assert.deepStrictEqual([...forA.keys()].sort(), [key("a"), key("q")])
      const forNone = yield* snapshot.rowsForWrite(new Set())
      assert.deepStrictEqual([...forNone.keys()], [key("q")])
      // landed: only a tentative row with the written id becomes Durable.
      yield* snapshot.landed(new Map([[key("a"), "sb_a" as ClaimId], [key("b"), "sb_other" as ClaimId]]))
      assert.isTrue(Option.isSome(yield* table.durable(key("a"))))
      assert.isTrue(Option.isNone(yield* table.durable(key("b"))))
      assert.isTrue(Option.isNone(yield* table.durable(key("q"))), "quarantined is not durable")
      const afterLanding = yield* snapshot.rowsForWrite(new Set())
      assert.deepStrictEqual([...afterLanding.keys()].sort(), [key("a"), key("q")])
    })))

  it.effect("rows in the same state share one state value: no row owns an object for it", () =>
    run(Effect.gen(function*() {
      const table = yield* ClaimTable
      const snapshot = yield* ClaimsSnapshot
      yield* table.loadQuarantined(new Map([[key("q"), rec("sb_q")], [key("r"), rec("sb_r")]]))
      yield* table.recordTentative(key("a"), rec("sb_a"), pod("a", "ua"))
      yield* table.recordTentative(key("b"), rec("sb_b"), pod("b", "ub"))
      yield* table.recordTentative(key("c"), rec("sb_c"), pod("c", "uc"))
      const stateOf = (s: ClaimTableState, name: string) => s.rows.get(key(name))?.state
      const before = yield* table.state
      assert.strictEqual(stateOf(before, "q"), stateOf(before, "r"))
      assert.strictEqual(stateOf(before, "a"), stateOf(before, "b"))
      yield* snapshot.landed(new Map([[key("a"), "sb_a" as ClaimId], [key("b"), "sb_b" as ClaimId]]))
      yield* table.judgeQuarantined(new Map([[key("q"), "sb_q" as ClaimId]]), new Map([["sb_q" as ClaimId, Option.none()]]), DateTime.makeUnsafe(0))
      const after = yield* table.state
      assert.strictEqual(stateOf(after, "a")?._tag, "Durable")
      assert.strictEqual(stateOf(after, "a"), stateOf(after, "b"))
      assert.strictEqual(stateOf(after, "a"), stateOf(after, "q"))
    })))

  it.effect("rowsForWrite is a snapshot: changes made after it (even while a write is in flight) are not in it", () =>
    run(Effect.gen(function*() {
      const table = yield* ClaimTable
      const snapshot = yield* ClaimsSnapshot
      yield* table.loadQuarantined(new Map([[key("q"), rec("sb_q")], [key("r"), rec("sb_r")]]))
      yield* table.recordTentative(key("a"), rec("sb_a"), pod("a", "ua"))
      const rows = yield* snapshot.rowsForWrite(new Set([key("a")]))
      yield* table.dropClaim(key("q"), "sb_q" as ClaimId)
      yield* table.recordTentative(key("a"), rec("sb_a2"), pod("a", "ua"))
      yield* table.recordTentative(key("b"), rec("sb_b"), pod("b", "ub"))
      assert.strictEqual(rows.size, 3)
      assert.strictEqual(rows.get(key("a"))?.id, "sb_a")
      assert.isTrue(rows.has(key("q")))
      assert.isFalse(rows.has(key("b")))
      const seen: Array<string> = []
      rows.forEach((record, k) => seen.push(`${k}=${record.id}`))
      assert.deepStrictEqual(seen.sort(), ["ns/a=sb_a", "ns/q=sb_q", "ns/r=sb_r"])
      assert.deepStrictEqual([...rows].map(([k]) => k).sort(), [key("a"), key("q"), key("r")])
    })))

  it.effect("durable lookup sees only settled rows; held lookup sees all three states (ST-2)", () =>
    run(Effect.gen(function*() {
      const table = yield* ClaimTable
      yield* table.loadQuarantined(new Map([[key("q"), rec("sb_q")]]))
      yield* table.recordTentative(key("t"), rec("sb_t"), pod("t", "ut"))
      assert.isTrue(Option.isNone(yield* table.durable(key("q"))))
      assert.isTrue(Option.isNone(yield* table.durable(key("t"))))
      assert.strictEqual(Option.getOrThrow(yield* table.held(key("q"))).state._tag, "Quarantined")
      assert.strictEqual(Option.getOrThrow(yield* table.held(key("t"))).state._tag, "Tentative")
    })))

  it.effect("adopt: refuses tentative and quarantined rows, rebinds a durable one and fills only a missing claimedAt (CRT-4, CRT-5)", () =>
    run(Effect.gen(function*() {
      const table = yield* ClaimTable
      const snapshot = yield* ClaimsSnapshot
      const now = DateTime.makeUnsafe(5_000)
      yield* table.loadQuarantined(new Map([[key("q"), rec("sb_q")]]))
      assert.isTrue(Option.isNone(yield* table.adopt(key("q"), pod("q", "u2"), now)))
      yield* table.recordTentative(key("a"), rec("sb_a"), pod("a", "u1"))
      assert.isTrue(Option.isNone(yield* table.adopt(key("a"), pod("a", "u2"), now)))
      yield* snapshot.landed(new Map([[key("a"), "sb_a" as ClaimId]]))
      const adopted = Option.getOrThrow(yield* table.adopt(key("a"), pod("a", "u2"), now))
      assert.strictEqual(adopted.record.id, "sb_a")
      assert.strictEqual(adopted.record.podUID, "u2")
      assert.strictEqual(adopted.previousPodUID, rec("sb_a").podUID)
      assert.isTrue(adopted.changed)
      assert.deepStrictEqual(adopted.record.claimedAt, Option.some(now))
      const again = Option.getOrThrow(yield* table.adopt(key("a"), pod("a", "u3"), DateTime.makeUnsafe(9_000)))
      assert.deepStrictEqual(again.record.claimedAt, Option.some(now), "a known claimedAt is kept")
      assert.strictEqual(again.previousPodUID, "u2")
      assert.strictEqual(Option.getOrThrow(yield* table.pod(key("a"))).metadata?.uid, "u3")
    })))

  it.effect("adopt: the same Pod re-attached keeps the very record (nothing changed); a missing claimedAt is still filled", () =>
    run(Effect.gen(function*() {
      const table = yield* ClaimTable
      const snapshot = yield* ClaimsSnapshot
      const now = DateTime.makeUnsafe(5_000)
      const record: ClaimRecord = { ...rec("sb_a"), claimedAt: Option.some(DateTime.makeUnsafe(1_000)) }
      yield* table.recordTentative(key("a"), record, pod("a", record.podUID))
      yield* snapshot.landed(new Map([[key("a"), "sb_a" as ClaimId]]))
      const same = Option.getOrThrow(yield* table.adopt(key("a"), pod("a", record.podUID), now))
      assert.isFalse(same.changed)
      assert.strictEqual(same.record, record)
      assert.strictEqual(same.previousPodUID, record.podUID)
      assert.strictEqual(Option.getOrThrow(yield* table.durable(key("a"))), record)
      // Same UID but no claimedAt (a row written without one): filled, so changed.
      const bare = rec("sb_b")
      yield* table.recordTentative(key("b"), bare, pod("b", bare.podUID))
      yield* snapshot.landed(new Map([[key("b"), "sb_b" as ClaimId]]))
      const filled = Option.getOrThrow(yield* table.adopt(key("b"), pod("b", bare.podUID), now))
      assert.isTrue(filled.changed)
      assert.deepStrictEqual(filled.record.claimedAt, Option.some(now))
    })))

  it.effect("withdraw, refreshDeadline and dropClaim act only on the row that still carries the id", () =>
    run(Effect.gen(function*() {
      const table = yield* ClaimTable
      yield* table.recordTentative(key("a"), rec("sb_new"), pod("a", "u1"))
      assert.isFalse(yield* table.withdraw(key("a"), "sb_old" as ClaimId))
      assert.isFalse(yield* table.refreshDeadline(key("a"), "sb_old" as ClaimId, Option.none()))
      assert.isFalse(yield* table.dropClaim(key("a"), "sb_old" as ClaimId))
      assert.isTrue(Option.isSome(yield* table.held(key("a"))))
      assert.isTrue(yield* table.refreshDeadline(key("a"), "sb_new" as ClaimId, Option.some(DateTime.makeUnsafe(7))))
      assert.deepStrictEqual(Option.getOrThrow(yield* table.held(key("a"))).record.deadline, Option.some(DateTime.makeUnsafe(7)))
      assert.isTrue(yield* table.withdraw(key("a"), "sb_new" as ClaimId))
      assert.isTrue(Option.isNone(yield* table.held(key("a"))))
      assert.isTrue(Option.isNone(yield* table.pod(key("a"))), "withdraw removes the pod entry too")
    })))

  it.effect("judgeQuarantined: lifts listed rows (deadline back-filled, never overwritten), drops unlisted, skips changed rows (VER-2)", () =>
    run(Effect.gen(function*() {
      const table = yield* ClaimTable
      const withDeadline = rec("sb_2", 1_000)
      yield* table.loadQuarantined(new Map([
        [key("listed-no-deadline"), rec("sb_1")],
        [key("listed-deadline"), withDeadline],
        [key("gone"), rec("sb_3")],
        [key("replaced"), rec("sb_4")]
      ]))
      const snapshot = new Map<PodKey, ClaimId>([
        [key("listed-no-deadline"), "sb_1" as ClaimId],
        [key("listed-deadline"), "sb_2" as ClaimId],
        [key("gone"), "sb_3" as ClaimId],
        [key("replaced"), "sb_4" as ClaimId]
      ])
      // The key changed hands between the snapshot and the judgement.
      yield* table.recordTentative(key("replaced"), rec("sb_5"), pod("replaced", "u"))
      const listedDeadline = Option.some(DateTime.makeUnsafe(99_000))
      const judgement = yield* table.judgeQuarantined(snapshot, new Map([
        ["sb_1" as ClaimId, listedDeadline],
        ["sb_2" as ClaimId, listedDeadline]
      ]), DateTime.makeUnsafe(0))
      assert.deepStrictEqual([...judgement.lifted].sort(), [key("listed-deadline"), key("listed-no-deadline")])
      assert.deepStrictEqual(judgement.lost, [{ key: key("gone"), id: "sb_3" as ClaimId }])
      assert.deepStrictEqual(Option.getOrThrow(yield* table.durable(key("listed-no-deadline"))).deadline, listedDeadline)
      assert.deepStrictEqual(
        Option.getOrThrow(yield* table.durable(key("listed-deadline"))).deadline,
        Option.some(DateTime.makeUnsafe(1_000))
      )
      // Lifted without a change, the row keeps the very record loaded: the writer reuses its encoding.
      assert.strictEqual(Option.getOrThrow(yield* table.durable(key("listed-deadline"))), withDeadline)
      assert.strictEqual(Option.getOrThrow(yield* table.held(key("replaced"))).record.id, "sb_5")
      assert.deepStrictEqual(yield* table.quarantinedKeys, [])
    })))

  it.effect("LEASE-10: whether a Lost row's lease had ended is judged when its VM is found gone, and kept", () =>
    run(Effect.gen(function*() {
      const table = yield* ClaimTable
      yield* table.loadQuarantined(new Map([[key("expired"), rec("sb_1", 1_000)], [key("early"), rec("sb_2", 5_000)]]))
      const found = DateTime.makeUnsafe(2_000)
      yield* table.judgeQuarantined(new Map([[key("expired"), "sb_1" as ClaimId], [key("early"), "sb_2" as ClaimId]]), new Map(), found)
      const leaseEnded = (name: string) => Effect.map(table.lost(key(name)), Option.map((row) => row.leaseEnded))
      assert.deepStrictEqual(yield* leaseEnded("expired"), Option.some(true), "found gone at or after its deadline")
      assert.deepStrictEqual(yield* leaseEnded("early"), Option.some(false), "found gone before its deadline")
      // Marked again later (another pass, a generation named), past the deadline: the VM still went early.
      const again = yield* table.markLost(key("early"), "sb_2" as ClaimId, "another-uid", DateTime.makeUnsafe(9_000))
      assert.deepStrictEqual(Option.map(again, (row) => [row.leaseEnded, row.record.podUID]), Option.some([false, "another-uid"]))
      assert.deepStrictEqual(yield* leaseEnded("early"), Option.some(false))
    })))

  it.effect("notePresent forgets the missing mark of each listed id, in one update, and only theirs", () =>
    run(Effect.gen(function*() {
      const doubts = yield* ClaimDoubts
      const at = (s: number) => DateTime.makeUnsafe(s * 1000)
      const id = (n: string) => n as ClaimId
      yield* doubts.notePresent([id("a")])
      assert.deepStrictEqual(yield* doubts.noteMissing(id("a"), at(0)), at(0))
      assert.deepStrictEqual(yield* doubts.noteMissing(id("b"), at(1)), at(1))
      assert.deepStrictEqual(yield* doubts.noteMissing(id("c"), at(2)), at(2))
      // Missing since its first absence, until a listing shows it.
      assert.deepStrictEqual(yield* doubts.noteMissing(id("a"), at(5)), at(0))
      yield* doubts.notePresent([id("a"), id("x"), id("c")])
      assert.deepStrictEqual(yield* doubts.noteMissing(id("a"), at(10)), at(10))
      assert.deepStrictEqual(yield* doubts.noteMissing(id("b"), at(10)), at(1))
      assert.deepStrictEqual(yield* doubts.noteMissing(id("c"), at(11)), at(11))
    })))

  it.effect("storePod applies the stale-UID guard (ST-4) and keeps its own copy", () =>
    run(Effect.gen(function*() {
      const table = yield* ClaimTable
      const first = pod("a", "u1")
      assert.strictEqual(yield* table.storePod(key("a"), first), "Stored")
      first.metadata!.name = "mutated"
      assert.strictEqual(Option.getOrThrow(yield* table.pod(key("a"))).metadata?.name, "a")
      assert.strictEqual(yield* table.storePod(key("a"), pod("a", "u2")), "StaleUid")
      assert.strictEqual(yield* table.storePod(key("a"), { ...pod("a", "u1"), spec: { containers: [{ name: "x" }] } }), "Stored")
      assert.strictEqual(Option.getOrThrow(yield* table.pod(key("a"))).spec?.containers[0]?.name, "x")
    })))

  it.effect("keeps only the slim facts of a Pod it accepts (acceptedPodOf), as its own copy, never the object it was handed", () =>
    run(Effect.gen(function*() {
      const table = yield* ClaimTable
      const full: V1Pod = {
        apiVersion: "v1",
        kind: "Pod",
        metadata: {
          namespace: "ns",
          name: "a",
          uid: "u1",
          resourceVersion: "7",
          labels: { app: "x" },
          annotations: { k: "v" },
          ownerReferences: [{ apiVersion: "apps/v1", kind: "ReplicaSet", name: "rs", uid: "o1" }],
          managedFields: [{ manager: "kubectl", operation: "Update" }],
          creationTimestamp: new Date(1_000),
          finalizers: ["f"]
        },
        spec: {
          nodeName: "n",
          restartPolicy: "Never",
          containers: [{ name: "main", image: "python", env: [{ name: "E", value: "1" }], resources: { limits: { cpu: "1" } } }],
          volumes: [{ name: "v", emptyDir: {} }]
        },
        status: { phase: "Pending", qosClass: "BestEffort" }
      }
      const expected = {
        metadata: {
          name: "a",
          namespace: "ns",
          uid: "u1",
          resourceVersion: "7",
          labels: { app: "x" },
          annotations: { k: "v" },
          ownerReferences: [{ apiVersion: "apps/v1", kind: "ReplicaSet", name: "rs", uid: "o1" }]
        },
        spec: { restartPolicy: "Never", containers: [{ name: "main", image: "python" }] },
        status: { phase: "Pending" }
      }
      yield* table.storePod(key("a"), full)
      const kept = (yield* table.state).pods.get(key("a"))
      assert.deepStrictEqual(kept, expected)
      full.metadata!.labels!["app"] = "changed"
      full.spec!.containers[0]!.image = "changed"
      assert.deepStrictEqual((yield* table.state).pods.get(key("a")), expected, "a copy: the caller's object may change")
      yield* table.recordTentative(key("b"), rec("sb_b"), { ...full, metadata: { ...full.metadata, name: "b" } })
      assert.deepStrictEqual(Object.keys((yield* table.state).pods.get(key("b"))!.spec!), ["restartPolicy", "containers"])
      const handed = Option.getOrThrow(yield* table.pod(key("a")))
      handed.metadata!.labels!["app"] = "mutated"
      assert.deepStrictEqual((yield* table.state).pods.get(key("a")), expected, "handed out as a copy")
    })))

  it.effect("of a handed status it keeps the phase, reason and message only: never a Running Pod's conditions, containers, IPs or times", () =>
    run(Effect.gen(function*() {
      const table = yield* ClaimTable
      const at = new Date(Date.UTC(2026, 6, 27, 2, 15, 1))
      const running: V1Pod = {
        ...pod("a", "u1"),
        status: {
          phase: "Running",
          hostIP: "10.0.0.9",
          podIP: "10.0.0.9",
          podIPs: [{ ip: "10.0.0.9" }],
          startTime: at,
          qosClass: "BestEffort",
          conditions: [{ type: "Ready", status: "True", lastTransitionTime: at }],
          containerStatuses: [{
            name: "main",
            ready: true,
            restartCount: 0,
            image: "python",
            imageID: "sandboxd://sb_a",
            state: { running: { startedAt: at } }
          }]
        }
      }
      yield* table.storePod(key("a"), running)
      assert.deepStrictEqual((yield* table.state).pods.get(key("a"))?.status, { phase: "Running" })
      yield* table.storePod(key("a"), { ...running, status: { phase: "Failed", reason: "ProviderFailed", message: "no capacity", qosClass: "BestEffort" } })
      assert.deepStrictEqual((yield* table.state).pods.get(key("a"))?.status, { phase: "Failed", reason: "ProviderFailed", message: "no capacity" })
      yield* table.recordTentative(key("b"), rec("sb_b"), { ...running, metadata: { ...running.metadata, name: "b" } })
      assert.deepStrictEqual((yield* table.state).pods.get(key("b"))?.status, { phase: "Running" })
    })))
})
