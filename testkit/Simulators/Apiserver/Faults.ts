/**
 * The apiserver model's fault hooks, for tests: latency, injected error answers and stalled watches
 * (`Faults`, read by the HTTP face and, for stalled watches, by the model), and the deny list that
 * refuses a verb on a resource with 403 Forbidden as RBAC would (`DenyList`).
 */
import type { ResourceInfo } from "./Resources.ts"
import { type ApiStatusError, rbacForbidden } from "./Status.ts"

export interface DenyRule {
  /** get, list, watch, create, update, patch, delete */
  readonly verb: string
  /** plural, optionally with subresource: "pods", "pods/status" */
  readonly resource: string
  /** API group; any group when absent */
  readonly group?: string | undefined
  readonly namespace?: string | undefined
}

export interface FailureRule {
  /** HTTP method; any when absent */
  readonly method?: string | undefined
  /** matched against the request path (no query) */
  readonly path: string | RegExp
  readonly code: number
  /** remaining injections; forever when absent */
  times?: number | undefined
}

/** Fault injection. Latency and failure rules apply at the HTTP face; stalled watches in the model too. */
export interface Faults {
  latencyMs: number
  failures: Array<FailureRule>
  /** New watches get their response headers and then nothing: no events, no close. */
  stallWatches: boolean
}

export const noFaults = (): Faults => ({ latencyMs: 0, failures: [], stallWatches: false })

export class DenyList {
  private readonly rules: Array<DenyRule> = []
  private readonly user: string

  /** @param user the user named in Forbidden messages */
  constructor(user: string) {
    this.user = user
  }

  add(rule: DenyRule): void {
    this.rules.push(rule)
  }

  clear(): void {
    this.rules.length = 0
  }

  /** The 403 for `verb` on the resource (and subresource), or undefined when no rule denies it. */
  authorize(
    verb: string,
    r: ResourceInfo,
    sub: string | undefined,
    ns: string | undefined,
    name: string | undefined
  ): ApiStatusError | undefined {
    const resource = sub === undefined ? r.plural : `${r.plural}/${sub}`
    const namespace = r.namespaced ? ns : undefined
    const hit = this.rules.some((d) =>
      d.verb === verb && d.resource === resource && (d.group === undefined || d.group === r.group) &&
      (d.namespace === undefined || d.namespace === namespace)
    )
    return hit ? rbacForbidden(r, sub, name, verb, this.user, namespace) : undefined
  }
}
