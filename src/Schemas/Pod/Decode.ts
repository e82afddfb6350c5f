/**
 * A served Pod → the slim Pod: the fast reader (`Reader.ts`) first, the Schema (`Schema.ts`) for
 * any other shape; and what is known of a Pod the Schema refuses (INF-1 — a Pod the daemon cannot
 * decode is left out). Also a status built in memory → the slim status.
 */
import { Option, Result, Schema } from "effect"
import { scrubText } from "../Scrub.ts"
import { giveUp, isPlainRecord, readPod } from "./Reader.ts"
import { Pod, PodStatus } from "./Schema.ts"

/**
 * The apiserver writes `null` for an unset time or list; the slim Pod leaves such a key out. The
 * value given is left as it is: an object or array holding a `null` somewhere below is copied,
 * everything else is shared, so a value without `null`s comes back itself. `null` items of an
 * array stay, as they were parsed.
 */
export const dropNulls = (value: unknown): unknown => {
  if (value === null || typeof value !== "object") return value
  if (Array.isArray(value)) {
    let copy: Array<unknown> | undefined
    for (let i = 0; i < value.length; i++) {
      const item: unknown = value[i]
      const kept = dropNulls(item)
      if (kept !== item) (copy ??= value.slice())[i] = kept
    }
    return copy ?? value
  }
  const record = value as Record<string, unknown>
  // The copy is a spread, so a parsed `__proto__` key is an own property of it and is set as one.
  let copy: Record<string, unknown> | undefined
  for (const key in record) {
    const field = record[key]
    if (field === null) delete (copy ??= { ...record })[key]
    else if (typeof field === "object") {
      const kept = dropNulls(field)
      if (kept !== field) (copy ??= { ...record })[key] = kept
    }
  }
  return copy ?? value
}

const decodePodOption = Schema.decodeUnknownOption(Pod)
const decodeStatusType = Schema.decodeUnknownOption(Schema.toType(PodStatus))

/**
 * A served Pod (parsed JSON; the apiserver's `null`s may be left in, they read as absent) → the
 * slim Pod; None when it is not one. A Pod of another shape goes to the Schema after `dropNulls`.
 * Neither changes `json`.
 */
export const decodePod = (json: unknown): Option.Option<Pod> => {
  const pod = readPod(json)
  return pod === giveUp ? decodePodOption(dropNulls(json)) : Option.some(pod)
}

/**
 * What is read of a served Pod the slim Pod refuses (a value the apiserver stores but this
 * decoder does not: another client's field of an unexpected type, a future field shape): its
 * identity, each field "" where it is not a string, and why it was refused. The informer leaves
 * such a Pod out (INF-1 — a Pod the daemon cannot decode is left out) and names it in its log.
 */
export interface UndecodablePod {
  readonly namespace: string
  readonly name: string
  readonly uid: string
  readonly resourceVersion: string
  /** The Schema's message, scrubbed (it quotes the served Pod's keys) and cut to `UNDECODABLE_ERROR_LIMIT`. */
  readonly error: string
}

/** How much of a decode error is kept: its first lines name the field and the type expected. */
export const UNDECODABLE_ERROR_LIMIT = 300

const decodePodResult = Schema.decodeUnknownResult(Pod)

const stringAt = (record: unknown, key: string): string => {
  if (!isPlainRecord(record)) return ""
  const value = record[key]
  return typeof value === "string" ? value : ""
}

/**
 * A served Pod `decodePod` refused → what is known of it. Only on that path: the Schema decode
 * runs again for its message. The text comes from outside (field names, keys of labels and
 * annotations), so it is scrubbed before anything logs it.
 */
export const undecodablePod = (json: unknown): UndecodablePod => {
  const metadata = isPlainRecord(json) ? json["metadata"] : undefined
  const decoded = decodePodResult(dropNulls(json))
  const message = Result.isFailure(decoded) ? decoded.failure.message : "not a Pod"
  const scrubbed = scrubText(message.replace(/\s*\n\s*/g, " "))
  return {
    namespace: stringAt(metadata, "namespace"),
    name: stringAt(metadata, "name"),
    uid: stringAt(metadata, "uid"),
    resourceVersion: stringAt(metadata, "resourceVersion"),
    error: scrubbed.length > UNDECODABLE_ERROR_LIMIT ? `${scrubbed.slice(0, UNDECODABLE_ERROR_LIMIT)}…` : scrubbed
  }
}

/** The Schema decode alone (what `decodePod` gives for every input), for the tests that compare the two. */
export const decodePodBySchema = (json: unknown): Option.Option<Pod> => decodePodOption(dropNulls(json))

/** A status built in memory (client-node typed, `Date` times) → the slim status, unknown fields dropped. */
export const slimStatus = (status: unknown): Option.Option<PodStatus> => decodeStatusType(status ?? {})
