// health-check: `helm test` for vk-sandbox. Runs as
//   node -e <this file> -- <namespace> <daemonset> <metrics port> [<service account dir>]
// in the test Pod, with its service account (get the DaemonSet, list its Pods: nothing else), as
// the image has no shell and no curl. Every node the DaemonSet should run on must have a running
// daemon whose /healthz and /readyz answer 200 on its host IP and metrics port. One line per node,
// then a summary; exit 1 when any node fails. Only statuses and the daemon's own /readyz text are
// printed, never a credential.
"use strict"
const fs = require("node:fs")
const http = require("node:http")
const https = require("node:https")
const path = require("node:path")

const [namespace, daemonSet, portText, saDir = "/var/run/secrets/kubernetes.io/serviceaccount"] = process.argv.slice(1)
const port = Number(portText)
const fail = (message) => {
  process.stderr.write(`health-check: ${message}\n`)
  process.exit(1)
}
if (!namespace || !daemonSet || !Number.isInteger(port) || port < 1 || port > 65535) {
  fail("usage: health-check <namespace> <daemonset> <metrics port> [<service account dir>]")
}
const TIMEOUT_MS = 5000

/** GET `url`; resolves { status, body } (body cut to `limit` bytes), or { status: 0, body: why } on no answer. */
const get = (url, options, limit = 4096) =>
  new Promise((resolve) => {
    const send = url.startsWith("https:") ? https.get : http.get
    const req = send(url, { ...options, timeout: TIMEOUT_MS }, (res) => {
      let body = ""
      res.setEncoding("utf8")
      res.on("data", (chunk) => {
        if (body.length < limit) body += chunk
      })
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body: body.slice(0, limit) }))
    })
    req.on("timeout", () => req.destroy(new Error(`no answer within ${TIMEOUT_MS} ms`)))
    req.on("error", (error) => resolve({ status: 0, body: error.message }))
  })

const apiserver = async (apiPath) => {
  const host = process.env.KUBERNETES_SERVICE_HOST
  const apiPort = process.env.KUBERNETES_SERVICE_PORT || "443"
  if (!host) fail("KUBERNETES_SERVICE_HOST is not set")
  const token = fs.readFileSync(path.join(saDir, "token"), "utf8").trim()
  const ca = fs.readFileSync(path.join(saDir, "ca.crt"))
  const base = `https://${host.includes(":") ? `[${host}]` : host}:${apiPort}`
  const reply = await get(`${base}${apiPath}`, { ca, headers: { authorization: `Bearer ${token}`, accept: "application/json" } }, 64 * 1024 * 1024)
  if (reply.status !== 200) fail(`GET ${apiPath}: HTTP ${reply.status} ${reply.body.slice(0, 300)}`)
  return JSON.parse(reply.body)
}

const oneLine = (text) => text.replace(/\s+/g, " ").trim().slice(0, 300)

const main = async () => {
  const ds = await apiserver(`/apis/apps/v1/namespaces/${namespace}/daemonsets/${daemonSet}`)
  const labels = ds.spec?.selector?.matchLabels ?? {}
  const selector = Object.entries(labels).map(([k, v]) => `${k}=${v}`).join(",")
  const desired = ds.status?.desiredNumberScheduled ?? 0
  const pods = (await apiserver(`/api/v1/namespaces/${namespace}/pods?labelSelector=${encodeURIComponent(selector)}`)).items ?? []
  const failures = []
  let healthy = 0
  const byNode = [...pods].sort((a, b) => (a.spec?.nodeName ?? "").localeCompare(b.spec?.nodeName ?? ""))
  for (const pod of byNode) {
    const node = pod.spec?.nodeName || `(unscheduled Pod ${pod.metadata?.name})`
    const ip = pod.status?.hostIP
    if (pod.metadata?.deletionTimestamp) continue
    if (pod.status?.phase !== "Running" || !ip) {
      failures.push(`${node}: the daemon's Pod ${pod.metadata?.name} is ${pod.status?.phase ?? "unknown"}, not running`)
      continue
    }
    const base = `http://${ip.includes(":") ? `[${ip}]` : ip}:${port}`
    const live = await get(`${base}/healthz`, {})
    const ready = await get(`${base}/readyz`, {})
    if (live.status === 200 && ready.status === 200) {
      healthy++
      process.stdout.write(`health-check: ${node}: ok (healthz 200, readyz 200 at ${base})\n`)
    } else {
      const said = (reply) => (reply.status === 0 ? `no answer (${reply.body})` : `${reply.status} ${oneLine(reply.body)}`)
      failures.push(`${node}: healthz ${said(live)}; readyz ${said(ready)} (at ${base})`)
    }
  }
  if (healthy < desired && failures.length === 0) {
    failures.push(`only ${healthy} of the ${desired} nodes the DaemonSet should run on have a daemon Pod`)
  }
  for (const line of failures) process.stdout.write(`health-check: ${line}\n`)
  process.stdout.write(`health-check: ${healthy} of ${desired} daemons healthy and ready\n`)
  process.exit(failures.length === 0 && healthy >= desired ? 0 : 1)
}
main().catch((error) => fail(error && error.message ? error.message : String(error)))
