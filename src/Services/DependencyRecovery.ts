/**
 * A dependency answering again after it did not (Q-08 — a dependency that comes back wakes the keys
 * waiting on it). The sandboxd client reports every exchange: answered (any reply but a 5xx) or not
 * (no reply, a timeout, a 5xx). The first answer after a failure is published, so work held back by
 * the failure (creates and releases waiting at the slow end of their backoff) can go at once
 * instead of waiting out what is left of each step. The live layer is
 * `Layers/DependencyRecoveryPubSub.ts`; without it nothing is published.
 */
import { Context, type Effect, type Stream } from "effect"

export type Dependency = "sandboxd"

export class DependencyRecovery extends Context.Service<DependencyRecovery, {
  /** One exchange with `dependency`: answered or not. */
  readonly note: (dependency: Dependency, answered: boolean) => Effect.Effect<void>
  /** One element each time a dependency answers after having failed. */
  readonly recovered: Stream.Stream<Dependency>
}>()("vk-sandbox/DependencyRecovery") {}
