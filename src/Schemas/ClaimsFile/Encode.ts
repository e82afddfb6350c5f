/**
 * The claims file written: the Go daemon's exact bytes (PER-1 — claims file format), keys sorted
 * as Go sorts them, strings escaped as Go escapes them.
 */
import { Option, Redacted } from "effect"
import type { ClaimIntent, ClaimRecord } from "../Claims.ts"
import type { PodKey } from "../Ids.ts"
import { formatTimestamp } from "./Time.ts"

const goEscapes = /[<>&\u2028\u2029]/g
const goEscapeOne = (c: string): string => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`

/** A JSON string literal escaped as Go's encoding/json escapes it. */
export const goJsonString = (s: string): string => {
  const json = JSON.stringify(s)
  goEscapes.lastIndex = 0
  return goEscapes.test(json) ? json.replace(goEscapes, goEscapeOne) : json
}

/** `{"id":…,…}` for one record, the reference's field order and omissions. */
export const encodeClaimRecord = (record: ClaimRecord): string => {
  let out = `{"id":${goJsonString(record.id)},"token":${goJsonString(Redacted.value(record.token))}`
  if (record.address !== "") out += `,"address":${goJsonString(record.address)}`
  out += `,"podUID":${goJsonString(record.podUID)}`
  if (Option.isSome(record.claimedAt)) out += `,"claimedAt":"${formatTimestamp(record.claimedAt.value)}"`
  if (Option.isSome(record.deadline)) out += `,"deadline":"${formatTimestamp(record.deadline.value)}"`
  const owner = record.owner
  if (owner !== undefined) {
    out += `,"owner":{"apiVersion":${goJsonString(owner.apiVersion)},"kind":${goJsonString(owner.kind)},` +
      `"name":${goJsonString(owner.name)},"uid":${goJsonString(owner.uid)}}`
  }
  if (record.unknownFields !== undefined && record.unknownFields !== "") out += `,${record.unknownFields}`
  return `${out}}`
}

/** `"ns/name":{…}`: one member of the `claims` object. */
export const encodeClaimMember = (key: PodKey, record: ClaimRecord): string =>
  `${goJsonString(key)}:${encodeClaimRecord(record)}`

/**
 * Go sorts map keys by their UTF-8 bytes, i.e. by code point. JavaScript's `<` compares UTF-16
 * code units, which differs only between surrogates and U+E000–U+FFFF; remap those.
 */
export const compareKeys = (a: string, b: string): number => {
  const n = Math.min(a.length, b.length)
  for (let i = 0; i < n; i++) {
    const x = a.charCodeAt(i)
    const y = b.charCodeAt(i)
    if (x !== y) {
      const rx = x >= 0xd800 ? (x >= 0xe000 ? x - 0x800 : x + 0x2000) : x
      const ry = y >= 0xd800 ? (y >= 0xe000 ? y - 0x800 : y + 0x2000) : y
      return rx - ry
    }
  }
  return a.length - b.length
}

/**
 * What follows the `claims` object: `,` and the other top-level members, or nothing. `members`
 * is `"name":value,…` (see `ClaimsDocument.unknownMembers`).
 */
export const trailerOf = (members: string): string => (members === "" ? "" : `,${members}`)

/** Assembles the file from `claims` members that are already encoded and sorted by key. */
export const assembleClaimsFile = (sortedMembers: ReadonlyArray<string>, otherMembers = ""): string =>
  `{"claims":{${sortedMembers.join(",")}}${trailerOf(otherMembers)}}`

/**
 * The whole file, the reference's exact bytes when there are no unknown fields. A fresh table is
 * `{"claims":{}}`. `otherMembers`: the top-level members after `claims` (`"name":value,…`).
 */
export const encodeClaimsFile = (rows: ReadonlyMap<PodKey, ClaimRecord>, otherMembers = ""): string => {
  const keys = Array.from(rows.keys()).sort(compareKeys)
  return assembleClaimsFile(keys.map((key) => encodeClaimMember(key, rows.get(key)!)), otherMembers)
}

/**
 * `"intents":{…}` for the intents, sorted by key; "" when there are none (the file then has no
 * `intents` member, as the reference writes it).
 */
export const encodeIntentsMember = (intents: ReadonlyMap<PodKey, ClaimIntent>): string => {
  if (intents.size === 0) return ""
  const keys = Array.from(intents.keys()).sort(compareKeys)
  const members = keys.map((key) => {
    const intent = intents.get(key)!
    return `${goJsonString(key)}:{"podUID":${goJsonString(intent.podUID)},"sentAt":"${formatTimestamp(intent.sentAt)}"}`
  })
  return `"intents":{${members.join(",")}}`
}

/** The top-level members after `claims`: the intents first, then the members this version does not know. */
export const membersAfterClaims = (intents: ReadonlyMap<PodKey, ClaimIntent>, unknownMembers: string): string => {
  const ours = encodeIntentsMember(intents)
  return ours === "" ? unknownMembers : unknownMembers === "" ? ours : `${ours},${unknownMembers}`
}
