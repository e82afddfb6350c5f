/**
 * The resources the simulated apiserver serves, with the per-resource facts of the real registry
 * strategies that the model needs (scope, subresources, unconditional update, field selectors).
 */
import type { GroupResource } from "./Status.ts"

export interface ResourceInfo extends GroupResource {
  readonly group: string
  readonly version: string
  readonly plural: string
  readonly singular: string
  readonly kind: string
  readonly namespaced: boolean
  readonly shortNames: ReadonlyArray<string>
  readonly subresources: ReadonlyArray<"status">
  /** May a PUT omit metadata.resourceVersion? (the strategy's AllowUnconditionalUpdate) */
  readonly allowUnconditionalUpdate: boolean
  /** Does a PUT of a missing object create it? (the strategy's AllowCreateOnUpdate) */
  readonly allowCreateOnUpdate: boolean
  /** DELETE answers with the object (pods) instead of a `Status` of kind Success. */
  readonly returnDeletedObject: boolean
  /** metadata.generation is set to 1 on create and bumped on spec (non-metadata) changes. */
  readonly tracksGeneration: boolean
  /** Field labels the resource's field selectors accept (metadata.name/namespace always). */
  readonly fieldLabels: ReadonlyArray<string>
  readonly customResource: boolean
  readonly verbs: ReadonlyArray<string>
}

export const apiVersionOf = (r: ResourceInfo): string => (r.group === "" ? r.version : `${r.group}/${r.version}`)

/** The object's etcd key, as storage errors quote it (nodes are stored as "minions"). */
export const registryKey = (r: ResourceInfo, namespace: string, name: string): string => {
  const base = r.customResource ? `${r.group}/${r.plural}` : r.plural === "nodes" ? "minions" : r.plural
  return `/registry/${base}/${r.namespaced ? `${namespace}/` : ""}${name}`
}

const allVerbs = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]
const meta = ["metadata.name", "metadata.namespace"]

const base = {
  shortNames: [],
  subresources: [],
  allowUnconditionalUpdate: true,
  allowCreateOnUpdate: false,
  returnDeletedObject: false,
  tracksGeneration: false,
  customResource: false,
  verbs: allVerbs
} as const

export const Pods: ResourceInfo = {
  ...base,
  group: "",
  version: "v1",
  plural: "pods",
  singular: "pod",
  kind: "Pod",
  namespaced: true,
  shortNames: ["po"],
  subresources: ["status"],
  // A pod or pods/status PUT without resourceVersion (or with "0") is accepted: checked against kube-apiserver
  // v1.37.2 (a server that refuses it with 422 is ModelOptions.unconditionalPodUpdates: false).
  allowUnconditionalUpdate: true,
  returnDeletedObject: true, // the pod registry answers DELETE with the pod
  tracksGeneration: true, // pods carry metadata.generation since 1.33
  fieldLabels: [
    ...meta,
    "spec.nodeName",
    "spec.restartPolicy",
    "spec.schedulerName",
    "spec.serviceAccountName",
    "spec.hostNetwork",
    "status.phase",
    "status.podIP",
    "status.nominatedNodeName"
  ]
}

export const Nodes: ResourceInfo = {
  ...base,
  group: "",
  version: "v1",
  plural: "nodes",
  singular: "node",
  kind: "Node",
  namespaced: false,
  shortNames: ["no"],
  subresources: ["status"],
  fieldLabels: [...meta, "spec.unschedulable"]
}

export const Namespaces: ResourceInfo = {
  ...base,
  group: "",
  version: "v1",
  plural: "namespaces",
  singular: "namespace",
  kind: "Namespace",
  namespaced: false,
  shortNames: ["ns"],
  subresources: ["status"],
  fieldLabels: [...meta, "status.phase"],
  verbs: ["create", "delete", "get", "list", "patch", "update", "watch"]
}

export const CoreEvents: ResourceInfo = {
  ...base,
  group: "",
  version: "v1",
  plural: "events",
  singular: "event",
  kind: "Event",
  namespaced: true,
  shortNames: ["ev"],
  allowCreateOnUpdate: true, // the event strategy: a PUT may create
  fieldLabels: [
    ...meta,
    "involvedObject.kind",
    "involvedObject.namespace",
    "involvedObject.name",
    "involvedObject.uid",
    "involvedObject.apiVersion",
    "involvedObject.resourceVersion",
    "involvedObject.fieldPath",
    "reason",
    "reportingComponent",
    "source",
    "type"
  ]
}

export const EventsV1: ResourceInfo = {
  ...base,
  group: "events.k8s.io",
  version: "v1",
  plural: "events",
  singular: "event",
  kind: "Event",
  namespaced: true,
  shortNames: ["ev"],
  allowCreateOnUpdate: true,
  fieldLabels: [...meta, "regarding.kind", "regarding.namespace", "regarding.name", "regarding.uid", "reason", "type", "reportingController"]
}

export const Leases: ResourceInfo = {
  ...base,
  group: "coordination.k8s.io",
  version: "v1",
  plural: "leases",
  singular: "lease",
  kind: "Lease",
  namespaced: true,
  // the lease strategy: no PUT without resourceVersion (422), but a PUT of a missing lease creates it
  allowUnconditionalUpdate: false,
  allowCreateOnUpdate: true,
  fieldLabels: meta
}

export const Sandboxes: ResourceInfo = {
  ...base,
  group: "agents.x-k8s.io",
  version: "v1beta1",
  plural: "sandboxes",
  singular: "sandbox",
  kind: "Sandbox",
  namespaced: true,
  shortNames: ["sandbox"],
  subresources: ["status"],
  allowUnconditionalUpdate: false, // custom resources refuse a PUT without resourceVersion (422)
  tracksGeneration: true,
  customResource: true,
  fieldLabels: meta
}

export const NodeInventories: ResourceInfo = {
  ...base,
  group: "extensions.agents.x-k8s.io",
  version: "v1beta1",
  plural: "nodeinventories",
  singular: "nodeinventory",
  kind: "NodeInventory",
  namespaced: false,
  allowUnconditionalUpdate: false,
  tracksGeneration: true,
  customResource: true,
  fieldLabels: meta
}

export const AllResources: ReadonlyArray<ResourceInfo> = [
  Pods,
  Nodes,
  Namespaces,
  CoreEvents,
  EventsV1,
  Leases,
  Sandboxes,
  NodeInventories
]

export const groupVersions = (resources: ReadonlyArray<ResourceInfo>): Array<{ group: string; version: string }> => {
  const seen = new Map<string, { group: string; version: string }>()
  for (const r of resources) seen.set(`${r.group}/${r.version}`, { group: r.group, version: r.version })
  return [...seen.values()]
}

export const findResource = (
  resources: ReadonlyArray<ResourceInfo>,
  group: string,
  version: string,
  plural: string
): ResourceInfo | undefined => resources.find((r) => r.group === group && r.version === version && r.plural === plural)
