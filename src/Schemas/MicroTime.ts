/**
 * Kubernetes `MicroTime` (a Lease's renewTime and acquireTime, an Event's eventTime): RFC 3339
 * with exactly six fractional digits. The apiserver parses it strictly and refuses three digits
 * (the real-apiserver suite checks it), so the schema writes six whatever it is given, and keeps
 * the microseconds the server sent when an object read is written back.
 */
import { Schema, SchemaTransformation } from "effect"

const rfc3339 = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(?:\.(\d+))?(Z|[+-]\d{2}:\d{2})$/i

/** RFC 3339 with exactly six fractional digits (padded or truncated); offsets are kept. */
export const formatMicroTime = (value: string | Date): string => {
  const text = typeof value === "string" ? value : Number.isNaN(value.getTime()) ? "Invalid Date" : value.toISOString()
  const formatted = sixDigits(text)
  if (formatted !== undefined) return formatted
  const parsed = new Date(text)
  // Unparseable, or outside what RFC 3339 can write (years past 9999 print as "+010000-..."): sent
  // as given, so the server's 400 reports it rather than a guess of ours.
  return Number.isNaN(parsed.getTime()) ? text : sixDigits(parsed.toISOString()) ?? text
}

const sixDigits = (text: string): string | undefined => {
  const match = rfc3339.exec(text)
  if (match === null) return undefined
  const fraction = (match[2] ?? "").padEnd(6, "0").slice(0, 6)
  return `${match[1]}.${fraction}${match[3]!.toUpperCase()}`
}

/** A MicroTime of epoch milliseconds. */
export const microTimeOf = (millis: number): string => formatMicroTime(new Date(millis))

/**
 * A string both in memory and on the wire, six fractional digits on both sides: any RFC 3339
 * text put in memory (`new Date().toISOString()`, three digits) leaves with six.
 */
export const MicroTime = Schema.String.pipe(
  Schema.decodeTo(
    Schema.String,
    SchemaTransformation.transform({ decode: formatMicroTime, encode: formatMicroTime })
  )
)
