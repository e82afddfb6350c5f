/**
 * One run of the `podList` section (bench/podList.ts), in a fresh node: makes the list body, reads
 * it once cold and then warm, and prints the figures as JSON. Run with `--expose-gc`.
 */
import * as ListBody from "../src/Kube/ListBody.ts"
import { decodePod, undecodablePod } from "../src/Schemas/Pod/Decode.ts"

const n = Number(process.argv[2] ?? 10_000)
const WARM_READS = 5

const hex = (i: number, width: number) => (i * 2654435761 % 2 ** 32).toString(16).padStart(width, "0").slice(0, width)
const time = (seconds: number) => new Date(Date.UTC(2026, 11, 1, 18, 53, 0) + seconds * 1000).toISOString().replace(/\.\d+Z$/, "Z")

/** A Running Pod as the in-memory apiserver serves one of the daemon section's burst. */
const servedPod = (i: number) => {
  const claim = `sb_${hex(i, 8)}${hex(i + 7, 8)}`
  return {
    metadata: {
      name: `scale-${i}`,
      namespace: "team-a",
      uid: `${hex(i, 8)}-${hex(i + 1, 4)}-4${hex(i + 2, 3)}-a${hex(i + 3, 3)}-${hex(i + 4, 8)}${hex(i + 5, 4)}`,
      resourceVersion: String(10_000 + i),
      generation: 1,
      creationTimestamp: time(Math.floor(i / 500)),
      annotations: { "sandbox.cocoonstack.io/template": "python", "sandbox.cocoonstack.io/claim-id": claim },
      managedFields: [
        {
          manager: "unknown",
          operation: "Update",
          apiVersion: "v1",
          time: time(Math.floor(i / 500)),
          fieldsType: "FieldsV1",
          fieldsV1: {
            "f:metadata": { "f:annotations": { "f:sandbox.cocoonstack.io/template": {} } },
            "f:spec": {
              "f:containers": {},
              "f:dnsPolicy": {},
              "f:enableServiceLinks": {},
              "f:nodeName": {},
              "f:restartPolicy": {},
              "f:schedulerName": {},
              "f:securityContext": {},
              "f:terminationGracePeriodSeconds": {}
            },
            "f:status": { "f:qosClass": {} }
          }
        },
        {
          manager: "vk-sandbox",
          operation: "Update",
          apiVersion: "v1",
          time: time(Math.floor(i / 500) + 4),
          fieldsType: "FieldsV1",
          fieldsV1: {
            "f:metadata": { "f:annotations": { "f:sandbox.cocoonstack.io/claim-id": {} } },
            "f:status": {
              "f:conditions": {},
              "f:containerStatuses": {},
              "f:hostIP": {},
              "f:phase": {},
              "f:podIP": {},
              "f:podIPs": {},
              "f:startTime": {}
            }
          },
          subresource: "status"
        }
      ]
    },
    spec: {
      restartPolicy: "Always",
      terminationGracePeriodSeconds: 30,
      dnsPolicy: "ClusterFirst",
      schedulerName: "default-scheduler",
      enableServiceLinks: true,
      securityContext: {},
      nodeName: "vk-demo",
      containers: [{ name: "main", image: "python" }]
    },
    status: {
      phase: "Running",
      conditions: [
        { type: "Initialized", status: "True" },
        { type: "Ready", status: "True" },
        { type: "PodScheduled", status: "True" }
      ],
      hostIP: "127.0.0.1",
      podIP: "127.0.0.1",
      podIPs: [{ ip: "127.0.0.1" }],
      startTime: time(Math.floor(i / 500) + 3),
      qosClass: "BestEffort",
      containerStatuses: [{
        name: "main",
        ready: true,
        restartCount: 0,
        image: "python",
        imageID: `sandboxd://${claim}`,
        state: { running: { startedAt: time(Math.floor(i / 500) + 3) } }
      }]
    }
  }
}

const body = Buffer.from(JSON.stringify({
  kind: "PodList",
  apiVersion: "v1",
  metadata: { resourceVersion: String(20_000 + n) },
  items: Array.from({ length: n }, (_, i) => servedPod(i))
}))

const gc = (globalThis as { gc?: () => void }).gc ?? (() => {})
const cpuMs = (read: () => unknown): number => {
  const before = process.threadCpuUsage()
  read()
  const spent = process.threadCpuUsage(before)
  return (spent.user + spent.system) / 1000
}
/** The body in 64 KB chunks, as a response arrives (undici's body reads the socket 64 KB at a time). */
const CHUNK = 64 * 1024
const chunks = Array.from({ length: Math.ceil(body.length / CHUNK) }, (_, i) => body.subarray(i * CHUNK, (i + 1) * CHUNK))
const read = () => {
  const list = ListBody.readList(body, decodePod, undecodablePod)
  if (list._tag !== "Read" || list.items.length !== n) throw new Error(`the list did not read: ${list._tag}`)
  return list.items
}
/** As `listPods` reads it: chunk by chunk (what the client adds around the reader is left out). */
const readChunked = () => {
  const reader = ListBody.listReader(decodePod, undecodablePod)
  for (const chunk of chunks) reader.push(chunk)
  const list = reader.end()
  if (list._tag !== "Read" || list.items.length !== n) throw new Error(`the list did not read: ${list._tag}`)
  return list.items
}

gc()
const heapBefore = process.memoryUsage().heapUsed
let kept: unknown = undefined
const firstCpuMs = cpuMs(() => {
  kept = read()
})
gc()
const heapPerPodBytes = (process.memoryUsage().heapUsed - heapBefore) / n
kept = undefined
const warmCpuMs: Array<number> = []
for (let i = 0; i < WARM_READS; i++) warmCpuMs.push(cpuMs(read))
const warmChunkedCpuMs: Array<number> = []
for (let i = 0; i < WARM_READS; i++) warmChunkedCpuMs.push(cpuMs(readChunked))
process.stdout.write(`${JSON.stringify({ bodyBytes: body.length, firstCpuMs, warmCpuMs, warmChunkedCpuMs, heapPerPodBytes })}\n`)
