/**
 * Pod controller owner → delete verdict. The live layer (`Programs/Authorization/OwnerResolverKube.ts`) reads
 * the owner with a quorum GET through KubeApi; it never fails: every doubt is a Preserve.
 */
import type { V1Pod } from "@kubernetes/client-node"
import { Context, type Effect } from "effect"
import type { DeleteVerdict } from "../Schemas/DeleteVerdict.ts"

export class OwnerResolver extends Context.Service<OwnerResolver, {
  readonly verdictFor: (pod: V1Pod) => Effect.Effect<DeleteVerdict>
}>()("vk-sandbox/OwnerResolver") {}
