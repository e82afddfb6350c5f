/**
 * The daemon's Prometheus metrics, defined once here and updated where the thing
 * happens. Exposed as Prometheus text by `HealthServer.ts` (`/metrics` on `--metrics-addr`).
 */
import { Duration, Effect, Metric } from "effect"
import type { ClaimState } from "../Schemas/Claims.ts"

/**
 * One series of a metric per attribute set, made once and kept. `Metric.withAttributes` on every
 * update makes a new wrapper, adds the attributes to the fiber's context and recomputes the
 * series key (a sorted, stringified copy of the attributes): a visible share of a 2000-Pod
 * burst's CPU, a dozen times per Pod. A metric made with its attributes (as here) has the very
 * same series key, so it updates, and `/metrics` shows, the same series as `withAttributes` would.
 */
const series = new WeakMap<object, { readonly make: (attributes: Record<string, string>) => Metric.Metric<number, unknown>; readonly made: Map<string, Metric.Metric<number, unknown>> }>()

const withSeries = <M extends Metric.Metric<number, unknown>>(metric: M, make: (attributes: Record<string, string>) => Metric.Metric<number, unknown>): M => {
  series.set(metric, { make, made: new Map() })
  return metric
}

const counter = (name: string, options: { readonly description: string }) =>
  withSeries(Metric.counter(name, options), (attributes) => Metric.counter(name, { ...options, attributes }))
const gauge = (name: string, options: { readonly description: string }) =>
  withSeries(Metric.gauge(name, options), (attributes) => Metric.gauge(name, { ...options, attributes }))
const histogram = (name: string, options: { readonly description: string; readonly boundaries: ReadonlyArray<number> }) =>
  withSeries(Metric.histogram(name, options), (attributes) => Metric.histogram(name, { ...options, attributes }))

/** The series of `metric` for `attributes` (a metric defined here), made on first use. */
export const labelled = <S>(metric: Metric.Metric<number, S>, attributes: Record<string, string>): Metric.Metric<number, S> => {
  const family = series.get(metric)
  if (family === undefined) return Metric.withAttributes(metric, attributes)
  let key = ""
  for (const name in attributes) key += `${name}\u0000${attributes[name]}\u0001`
  const known = family.made.get(key)
  // The family's series are made by the same constructor as `metric`, so they share its state type.
  if (known !== undefined) return known as Metric.Metric<number, S>
  const made = family.make(attributes)
  family.made.set(key, made)
  return made as Metric.Metric<number, S>
}

const latencyBoundaries = Metric.exponentialBoundaries({ start: 0.0005, factor: 2, count: 16 }) // 0.5 ms … ~16 s

export const claims = counter("vk_sandbox_claims_total", {
  description: "createPod outcomes: claimed, adopted, or the failure's tag"
})
export const claimDuration = histogram("vk_sandbox_claim_duration_seconds", {
  description: "createPod latency, from the reconcile's createPod call to the Running status pushed (no queue wait, no status write: see vk_sandbox_pod_start_duration_seconds)",
  boundaries: latencyBoundaries
})
export const releases = counter("vk_sandbox_releases_total", {
  description: "authorized releases by result: released, already_gone, failed"
})
export const deleteVerdicts = counter("vk_sandbox_delete_verdicts_total", {
  description: "delete-authorization verdicts by kind and reason"
})
/** Kept one more release for dashboards that read it; `vk_sandbox_claims_total{outcome="adopted"}` says the same. */
export const adoptions = counter("vk_sandbox_adoptions_total", {
  description: "DEPRECATED, use vk_sandbox_claims_total{outcome=\"adopted\"}; claims adopted in place by a same-name replacement Pod"
})
export const leaseExpiries = counter("vk_sandbox_lease_expiries_total", {
  description: "Failed (SandboxLeaseExpired) statuses published"
})
export const sandboxesLost = counter("vk_sandbox_sandboxes_lost_total", {
  description: "Pods declared Failed (SandboxLost): their sandbox confirmed gone before its lease ended"
})
export const straySandboxes = gauge("vk_sandbox_stray_sandboxes", {
  description: "listed sandboxes carrying a claim_ref of this node's Pods that no row holds (last orphan scan)"
})
export const claimsInDoubt = gauge("vk_sandbox_claims_in_doubt", {
  description: "pod keys whose last claim's outcome is unknown and not yet settled"
})
export const quarantinedClaims = gauge("vk_sandbox_quarantined_claims", {
  description: "claims loaded from disk not yet confirmed by a sandboxd listing"
})
export const claimsHeld = gauge("vk_sandbox_claims_held", {
  description: "rows in the claims table (any state)"
})
export const commitDuration = histogram("vk_sandbox_commit_duration_seconds", {
  description: "durable claims-file commit latency as seen by the caller",
  boundaries: latencyBoundaries
})
/** The stages of a Pod's start inside the daemon; their sum is the daemon's share of create → Running. */
export type PodStartStage = "queue" | "intent" | "claim" | "commit" | "status_write"
export const podStartStage = histogram("vk_sandbox_pod_start_stage_seconds", {
  description:
    "the daemon's share of a Pod's start, by stage: queue (watch delivery to reconcile start), intent (the claim intent's durable write), claim (the sandboxd claim), commit (the claim's durable write), status_write (status push to status written, rate-limiter wait included)",
  boundaries: latencyBoundaries
})
/**
 * MON-5 — one observation per Pod start (claimed or adopted), the whole of the daemon's share of
 * create → Running; buckets up to ~4 minutes, as a start may wait out retries for warm capacity.
 */
export const podStartDuration = histogram("vk_sandbox_pod_start_duration_seconds", {
  description:
    "create to Running as this daemon sees it, once per Pod it starts (claimed or adopted): from the informer handing the Pod to the pod queue (its watch event or list) to the apiserver acknowledging its Running status write; the queue wait, every create attempt and the status write (rate-limiter wait included) are in it; the scheduler's binding and the watch's delivery before the daemon saw the Pod are not, nor is a Pod already Running when a restarted daemon lists it",
  boundaries: Metric.exponentialBoundaries({ start: 0.0005, factor: 2, count: 20 }) // 0.5 ms … ~4.4 min
})
/** Observes `seconds` for one stage of a Pod's start. */
export const observeStage = (stage: PodStartStage, seconds: number) =>
  Metric.update(labelled(podStartStage, { stage }), seconds)
/** Times `effect` as one stage of a Pod's start (success or failure alike). */
export const timeStage = (stage: PodStartStage) => <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.trackDuration(effect, labelled(podStartStage, { stage }), (d) => Duration.toMillis(d) / 1000)

export const commitBatchSize = histogram("vk_sandbox_commit_batch_size", {
  description: "commits carried by one durable write (group commit)",
  boundaries: Metric.exponentialBoundaries({ start: 1, factor: 2, count: 10 })
})
export const sandboxdRequestDuration = histogram("vk_sandbox_sandboxd_request_duration_seconds", {
  description: "sandboxd request latency by operation",
  boundaries: latencyBoundaries
})
export const sandboxdErrors = counter("vk_sandbox_sandboxd_errors_total", {
  description: "sandboxd request failures by operation and error tag"
})
export const apiserverRequests = counter("vk_sandbox_apiserver_requests_total", {
  description: "apiserver requests by HTTP verb, resource and status code (error = no HTTP answer)"
})
export const apiserverRequestDuration = histogram("vk_sandbox_apiserver_request_duration_seconds", {
  description: "apiserver request latency by HTTP verb, resource and status code (error = no HTTP answer), rate-limiter wait included",
  boundaries: latencyBoundaries
})
export const rateLimiterWait = histogram("vk_sandbox_apiserver_rate_limiter_wait_seconds", {
  description: "time a request waited for the client-side rate limiter (--kube-api-qps, --kube-api-burst)",
  boundaries: latencyBoundaries
})
export const eventsFolded = counter("vk_sandbox_events_folded_total", {
  description: "Normal Pod events over the event budget, counted on the Node's summary Event by reason instead of written per Pod"
})
export const claimsByState = gauge("vk_sandbox_claims", {
  description:
    "claims table rows by state: durable, tentative (commit in flight), quarantined (not yet confirmed), lost (VM confirmed gone, row kept until its Pod is settled: VER-7)"
})
/** The `state` label of `vk_sandbox_claims` for each row state. */
export const claimStateLabel = {
  Durable: "durable",
  Tentative: "tentative",
  Quarantined: "quarantined",
  Lost: "lost"
} as const satisfies Record<ClaimState["_tag"], string>
export const watchRestarts = counter("vk_sandbox_watch_restarts_total", {
  description: "pod watch restarts by reason: closed, gone (relist), failed; backwards: the apiserver's resourceVersion older than the cache's (a silent watch's check or a list; relist)"
})
export const undecodablePods = counter("vk_sandbox_pods_undecodable_total", {
  description: "versions of Pods on this node the daemon cannot decode, each left out of its cache (INF-1); one per resourceVersion"
})
export const unreadablePods = gauge("vk_sandbox_pods_unreadable", {
  description: "Pods on this node whose newest version the daemon cannot decode (INF-1): each held as its last readable version was, or left out, until a readable version"
})
export const runDefects = counter("vk_sandbox_run_defects_total", {
  description: "runs of a key that died (a defect: a bug), by queue: reconcile, status_write; after 7 in a row the key waits for a change (Q-09)"
})
export const statusWriteConflicts = counter("vk_sandbox_status_write_conflicts_total", {
  description: "pods/status writes that met a 409 and were retried"
})

export const sandboxdUp = gauge("vk_sandbox_sandboxd_up", {
  description: "1 when the last sandboxd probe succeeded, else 0"
})
/** Why sandboxd cannot serve now, one series per reason (1 for the current one), sampled at the scrape. */
export const sandboxdUnavailable = gauge("vk_sandbox_sandboxd_unavailable", {
  description: "1 for the reason the last sandboxd probe failed (Unreachable, Unauthorized, Failing, Draining), 0 for the others"
})
/** The label values of `vk_sandbox_sandboxd_unavailable`: every reason the probe tells apart. */
export const sandboxdUnavailableReasons = ["Unreachable", "Unauthorized", "Failing", "Draining"] as const
export const claimsInDoubtPastSettle = gauge("vk_sandbox_claims_in_doubt_past_settle", {
  description: "pod keys in doubt whose settle window (--claim-settle-time after the attempt was abandoned) has passed, sampled at the scrape"
})
export const podsByPhase = gauge("vk_sandbox_pods", {
  description: "Pods on this node in the daemon's cache by phase, sampled at the scrape"
})
/** The label values of `vk_sandbox_pods`; any other phase a Pod reports counts as Unknown. */
export const podPhases = ["Pending", "Running", "Succeeded", "Failed", "Unknown"] as const
export const inventoryPublishes = counter("vk_sandbox_inventory_publishes_total", {
  description: "NodeInventory publishes by result: success, failed (only with --publish-inventory)"
})
export const inventoryLastSuccess = gauge("vk_sandbox_inventory_last_success_timestamp_seconds", {
  description: "when the NodeInventory was last applied, seconds since the Unix epoch; 0 until the first success (only with --publish-inventory)"
})
export const inventoryInterval = gauge("vk_sandbox_inventory_publish_interval_seconds", {
  description: "--publish-interval in seconds (only with --publish-inventory)"
})
export const nodeTainted = gauge("vk_sandbox_node_tainted", {
  description: "1 while the Node carries the sandboxd-unavailable NoSchedule taint, else 0"
})
export const kubeletApiDenials = counter("vk_sandbox_kubelet_api_denials_total", {
  description: "kubelet API requests answered 403, by the subresource the path asks for (its most specific: /pods asks nodes/pods, then nodes/proxy)"
})
/**
 * Set once, when the kubelet port's certificate is chosen (TLS-2 — which certificate; TLS-4 —
 * vk-cocoon's certificate is reused when it is usable).
 */
export const kubeletTlsInfo = gauge("vk_sandbox_kubelet_tls_info", {
  description: "always 1; source names the kubelet port's serving certificate: flags (--tls-cert/--tls-key), vk-cocoon (its kubelet pair, reused) or self-signed"
})

/** Add one to a counter with attributes. */
export const count = (counter: Metric.Metric<number, unknown>, attributes: Record<string, string>) =>
  Metric.update(labelled(counter, attributes), 1)

/**
 * Every family appears in /metrics from the start (a Prometheus family is exposed only once
 * updated): counters get 0 for their common label sets, gauges 0.
 */
export const initialize = Effect.all([
  count0(claims, { outcome: "claimed" }),
  count0(claims, { outcome: "adopted" }),
  count0(releases, { result: "released" }),
  count0(releases, { result: "already_gone" }),
  count0(releases, { result: "failed" }),
  Metric.update(adoptions, 0),
  Metric.update(leaseExpiries, 0),
  Metric.update(sandboxesLost, 0),
  Metric.update(straySandboxes, 0),
  Metric.update(claimsInDoubt, 0),
  Metric.update(quarantinedClaims, 0),
  Metric.update(claimsHeld, 0),
  count0(watchRestarts, { reason: "closed" }),
  count0(watchRestarts, { reason: "gone" }),
  count0(watchRestarts, { reason: "failed" }),
  count0(watchRestarts, { reason: "backwards" }),
  Metric.update(statusWriteConflicts, 0),
  count0(runDefects, { queue: "reconcile" }),
  count0(runDefects, { queue: "status_write" }),
  Metric.update(undecodablePods, 0),
  Metric.update(unreadablePods, 0),
  Metric.update(sandboxdUp, 0),
  ...sandboxdUnavailableReasons.map((reason) => Metric.update(labelled(sandboxdUnavailable, { reason }), 0)),
  Metric.update(claimsInDoubtPastSettle, 0),
  ...podPhases.map((phase) => Metric.update(labelled(podsByPhase, { phase }), 0)),
  ...Object.values(claimStateLabel).map((state) => Metric.update(labelled(claimsByState, { state }), 0)),
  Metric.update(nodeTainted, 0)
], { discard: true })

function count0(counter: Metric.Metric<number, unknown>, attributes: Record<string, string>) {
  return Metric.update(labelled(counter, attributes), 0)
}
