/** This node's NodeInventory (cluster-scoped): server-side apply, forced, as field manager `vk-sandbox`. */
import { HttpMethod, PatchStrategy } from "@kubernetes/client-node"
import { type Effect, Option, Schema } from "effect"
import type { KubeError } from "../../Services/KubeApi.ts"
import { invalid } from "../Status.ts"
import type { Transport } from "../Transport.ts"

export const fieldManager = "vk-sandbox"
export const nodeInventoryPath = "/apis/extensions.agents.x-k8s.io/v1beta1/nodeinventories"

const ObjectName = Schema.Struct({ metadata: Schema.Struct({ name: Schema.String }) })
const decodeObjectName = Schema.decodeUnknownOption(ObjectName)

export const make = ({ raw }: Transport) => {
  const applyNodeInventory = (inventory: object): Effect.Effect<unknown, KubeError> => {
    const named = decodeObjectName(inventory)
    if (Option.isNone(named)) return invalid("applyNodeInventory", "inventory without metadata.name")
    return raw("applyNodeInventory", {
      method: HttpMethod.PATCH,
      path: `${nodeInventoryPath}/${encodeURIComponent(named.value.metadata.name)}`,
      query: { fieldManager, force: "true" },
      body: inventory,
      contentType: PatchStrategy.ServerSideApply
    })
  }

  return { applyNodeInventory }
}
