/** CreatePod through the real file store in a temp directory (durability ordering on disk). */
import { assert, describe, it } from "@effect/vitest"
import * as NFS from "node:fs"
import * as NOS from "node:os"
import * as NPath from "node:path"
import { Effect, Fiber, Option, Redacted } from "effect"
import { type ClaimsFileOps, nodeClaimsFileOps } from "../../../src/Layers/ClaimsStoreFile.ts"
import { ClaimsStore } from "../../../src/Services/ClaimsStore.ts"
import { ClaimTable } from "../../../src/Services/ClaimTable.ts"
import { PodLifecycle } from "../../../src/Services/PodLifecycle.ts"
import { SandboxdSim } from "../../../testkit/Simulators/Sandboxd/Model.ts"
import { drain, eventually, fileWorld, keyOf, pod, subscribePushes } from "./harness.ts"

const tempStatePath = Effect.acquireRelease(
  Effect.sync(() => NPath.join(NFS.mkdtempSync(NPath.join(NOS.tmpdir(), "vk-claims-")), "state", "claims.json")),
  (path) => Effect.sync(() => NFS.rmSync(NPath.dirname(NPath.dirname(path)), { recursive: true, force: true }))
)

/** File steps whose rename can be held or failed by the test. */
const controllableOps = () => {
  const control = {
    holdRename: false,
    renameReached: false,
    failRenames: 0,
    /** Renames let through before `failRenames` starts counting. */
    passRenames: 0,
    release: (): void => undefined
  }
  const ops: ClaimsFileOps = {
    ...nodeClaimsFileOps,
    rename: async (from, to) => {
      if (control.passRenames > 0) control.passRenames--
      else if (control.failRenames > 0) {
        control.failRenames--
        throw Object.assign(new Error("injected EIO"), { code: "EIO" })
      }
      if (control.holdRename) {
        control.renameReached = true
        await new Promise<void>((resolve) => {
          control.release = resolve
        })
      }
      return nodeClaimsFileOps.rename(from, to)
    }
  }
  return { control, ops }
}

const readClaimsFile = (path: string): Record<string, Record<string, unknown>> | undefined =>
  NFS.existsSync(path) ? (JSON.parse(NFS.readFileSync(path, "utf8")) as { claims: Record<string, Record<string, unknown>> }).claims : undefined

describe("CreatePod over the file store", () => {
  it.effect("Running is pushed only after the rename landed; the row is on disk in the reference's format", () =>
    Effect.gen(function*() {
      const statePath = yield* tempStatePath
      const { control, ops } = controllableOps()
      yield* Effect.gen(function*() {
        const provider = yield* PodLifecycle
        const pushes = yield* subscribePushes
        control.holdRename = true
        const create = yield* Effect.forkChild(provider.createPod(pod("web")))
        yield* eventually(Effect.sync(() => control.renameReached))
        assert.deepStrictEqual(yield* drain(pushes), [], "no Running before the rename")
        assert.isUndefined(readClaimsFile(statePath))
        control.holdRename = false
        control.release()
        yield* Fiber.join(create)
        const [pushed] = yield* drain(pushes)
        assert.strictEqual(pushed.status?.phase, "Running")
        const row = readClaimsFile(statePath)?.["default/web"]
        const record = Option.getOrThrow(yield* (yield* ClaimTable).durable(keyOf("web")))
        assert.deepStrictEqual(Object.keys(row ?? {}), ["id", "token", "address", "podUID", "claimedAt", "deadline"])
        assert.strictEqual(row?.id, record.id)
        assert.strictEqual(row?.token, Redacted.value(record.token))
        assert.strictEqual(row?.podUID, "uid-web")
        assert.match(String(row?.claimedAt), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/)
        assert.strictEqual((NFS.statSync(statePath).mode & 0o777).toString(8), "600")
      }).pipe(Effect.provide(fileWorld({ config: { statePath }, fileStore: { ops } }), { local: true }))
    }))

  it.effect("an injected rename failure undoes the claim: VM returned, row withdrawn, old file intact, no temp left", () =>
    Effect.gen(function*() {
      const statePath = yield* tempStatePath
      const { control, ops } = controllableOps()
      yield* Effect.gen(function*() {
        const provider = yield* PodLifecycle
        const sim = yield* SandboxdSim
        yield* provider.createPod(pod("first"))
        const before = NFS.readFileSync(statePath, "utf8")
        // The first write (the claim's intent) lands; the second (its row) fails at the rename.
        control.passRenames = 1
        control.failRenames = 1
        const error = yield* Effect.flip(provider.createPod(pod("web")))
        assert.strictEqual(error._tag, "ClaimNotPersisted")
        if (error._tag !== "ClaimNotPersisted") return
        assert.strictEqual(error.cause.operation, "rename")
        assert.isFalse((yield* sim.claims).some((claim) => claim.id === error.claimId), "returned to sandboxd")
        assert.isTrue(Option.isNone(yield* (yield* ClaimTable).held(keyOf("web"))))
        const after = JSON.parse(NFS.readFileSync(statePath, "utf8")) as { claims: unknown; intents?: Record<string, unknown> }
        assert.deepStrictEqual(after.claims, (JSON.parse(before) as { claims: unknown }).claims, "the rows as before")
        // The intent stays on disk until the next write: after a crash it would only cost a listing.
        assert.deepStrictEqual(Object.keys(after.intents ?? {}), ["default/web"])
        assert.deepStrictEqual(yield* (yield* ClaimsStore).intents, new Map(), "settled: the sandbox was returned")
        // the failed write removed its temp file before it failed
        assert.deepStrictEqual(NFS.readdirSync(NPath.dirname(statePath)).filter((name) => name.includes(".tmp")), [])
      }).pipe(Effect.provide(fileWorld({ config: { statePath }, fileStore: { ops } }), { local: true }))
    }))
})
