/**
 * NodeInventory publishing (INV-2 — inventory entries; INV-4 — the NodeInventory object; INV-5 —
 * one publish is all or nothing; INV-7 — publish cadence). One cluster-scoped object per node,
 * server-side applied with force as field manager `vk-sandbox`. Entries come from sandboxd's
 * listing (the authoritative live set), never from the claims table; the table only lends each own
 * claim's `owner_addr`. A failed listing or info call skips the publish: a half-empty inventory is
 * never applied. Nothing here is fatal. Each publish is counted by its result, and the last
 * success's time is kept, so an operator can alert on an inventory gone stale.
 */
import { Clock, Duration, Effect, Metric } from "effect"
import type { ClaimId } from "../Schemas/Ids.ts"
import { AppConfig } from "../Services/Config.ts"
import { KubeApi, type KubeError } from "../Services/KubeApi.ts"
import { every } from "../Services/Loops.ts"
import { inventoryInterval, inventoryLastSuccess, inventoryPublishes, labelled } from "../Services/Metrics.ts"
import {
  type ListedSandbox,
  type NodeInfo,
  SandboxdClient,
  type SandboxdListError
} from "../Services/SandboxdClient.ts"

export const NODE_INVENTORY_API_VERSION = "extensions.agents.x-k8s.io/v1beta1"

export interface InventoryEntry {
  readonly name: string
  readonly id?: string
  readonly phase: "Running" | "Hibernated"
  readonly claimRef?: string
  readonly addr?: string
}

export interface InventoryPool {
  readonly template: string
  readonly net?: string
  readonly size?: string
  readonly warm: number
  readonly target: number
}

export interface NodeInventoryBody {
  readonly apiVersion: typeof NODE_INVENTORY_API_VERSION
  readonly kind: "NodeInventory"
  readonly metadata: { readonly name: string }
  readonly node: string
  readonly entries?: ReadonlyArray<InventoryEntry>
  readonly address?: string
  readonly pools?: ReadonlyArray<InventoryPool>
}

/** Byte-wise ascending, as the reference sorts (`"_"` before `"t"`). */
const byName = (a: InventoryEntry, b: InventoryEntry) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)

export const entriesOf = (
  listed: ReadonlyArray<ListedSandbox>,
  addressById: ReadonlyMap<ClaimId, string>
): ReadonlyArray<InventoryEntry> =>
  listed
    .map((row): InventoryEntry => {
      const name = row.claimRef !== "" ? row.claimRef : row.id
      const addr = addressById.get(row.id) ?? ""
      return {
        name,
        id: row.id,
        phase: row.hibernated ? "Hibernated" : "Running",
        claimRef: name,
        ...(addr !== "" ? { addr } : {})
      }
    })
    .sort(byName)

export const poolsOf = (info: NodeInfo): ReadonlyArray<InventoryPool> =>
  info.pools.map((pool) => ({
    template: pool.template,
    ...(pool.net !== "" ? { net: pool.net } : {}),
    ...(pool.size !== "" ? { size: pool.size } : {}),
    warm: pool.warm,
    target: pool.target
  }))

/** The INV-4 object; empty lists and an empty address are omitted, so SSA removes them. */
export const inventoryBody = (
  nodeName: string,
  entries: ReadonlyArray<InventoryEntry>,
  address: string,
  pools: ReadonlyArray<InventoryPool>
): NodeInventoryBody => ({
  apiVersion: NODE_INVENTORY_API_VERSION,
  kind: "NodeInventory",
  metadata: { name: nodeName },
  node: nodeName,
  ...(entries.length > 0 ? { entries } : {}),
  ...(address !== "" ? { address } : {}),
  ...(pools.length > 0 ? { pools } : {})
})

export interface InventorySources {
  /** Every claim of this node (tentative and quarantined included) with a non-empty address, by id. */
  readonly addressById: Effect.Effect<ReadonlyMap<ClaimId, string>>
}

/** One publish: entries, then node info, then apply (INV-5). Fails with the typed cause of the skipped step. */
export const publishOnce = Effect.fn("InventoryPublisher.publishOnce")(function*(sources: InventorySources) {
  const config = yield* AppConfig
  const sandboxd = yield* SandboxdClient
  const kube = yield* KubeApi
  const listed = yield* sandboxd.listSandboxes
  const entries = entriesOf(listed, yield* sources.addressById)
  const info = yield* sandboxd.info
  const body = inventoryBody(config.nodeName, entries, config.sandboxdAdvertiseAddr, poolsOf(info))
  yield* kube.applyNodeInventory(body)
  return body
})

export type PublishError = SandboxdListError | KubeError

const published = labelled(inventoryPublishes, { result: "success" })
const failed = labelled(inventoryPublishes, { result: "failed" })

/**
 * Publish immediately, then every `--publish-interval`, forever; each failure is logged with
 * its typed cause and the next tick rebuilds from live state (INV-7).
 */
export const runPublisher = (sources: InventorySources) =>
  Effect.gen(function*() {
    const config = yield* AppConfig
    // The families appear as publishing starts, so "never published" is a series an alert can read.
    yield* Metric.update(inventoryInterval, Duration.toMillis(config.publishInterval) / 1000)
    yield* Metric.update(inventoryLastSuccess, 0)
    yield* Metric.update(published, 0)
    yield* Metric.update(failed, 0)
    const tick = publishOnce(sources).pipe(
      Effect.tap((body) =>
        Effect.logDebug("node inventory published").pipe(
          Effect.annotateLogs({ node: config.nodeName, entries: body.entries?.length ?? 0 })
        )
      ),
      Effect.tap(() =>
        Effect.flatMap(Clock.currentTimeMillis, (now) =>
          Effect.andThen(Metric.update(published, 1), Metric.update(inventoryLastSuccess, now / 1000)))
      ),
      Effect.tapError((error: PublishError) =>
        Effect.logError("node inventory publish failed; will retry on next tick").pipe(
          Effect.annotateLogs({ node: config.nodeName, error }),
          Effect.andThen(Metric.update(failed, 1))
        )
      ),
      Effect.ignore
    )
    yield* every(Duration.max(config.publishInterval, Duration.millis(1)), tick, { immediately: true })
  })
