/**
 * Kubernetes resource quantity syntax, for --node-cpu, --node-memory and --node-pods, rejected up
 * front when bad (CFG-17 — validation instead of crashes):
 *   quantity ::= [sign] number suffix;  number ::= digits | digits "." [digits] | "." digits
 *   suffix   ::= "" | Ki | Mi | Gi | Ti | Pi | Ei | n | u | m | k | M | G | T | P | E
 *              | ("e" | "E") [sign] digits
 * No whitespace anywhere. `E` alone is exa; `E` followed by digits is an exponent (`1E3` = 1000).
 */
import { Result } from "effect"

export interface Quantity {
  /** The text as given; written to the node's capacity verbatim. */
  readonly text: string
  /** The value as a float (approximate for huge or very precise values). */
  readonly value: number
}

const binarySI: Readonly<Record<string, number>> = {
  Ki: 2 ** 10,
  Mi: 2 ** 20,
  Gi: 2 ** 30,
  Ti: 2 ** 40,
  Pi: 2 ** 50,
  Ei: 2 ** 60
}

const decimalSI: Readonly<Record<string, number>> = {
  n: -9,
  u: -6,
  m: -3,
  "": 0,
  k: 3,
  M: 6,
  G: 9,
  T: 12,
  P: 15,
  E: 18
}

const quantityPattern = /^([+-]?)(\d+(?:\.\d*)?|\.\d+)(.*)$/
const exponentPattern = /^[eE]([+-]?\d+)$/

const expected = "not a Kubernetes quantity (want e.g. 4000, 500m, 8Ti, 1.5Gi, 2e3)"

export const parseQuantity = (text: string): Result.Result<Quantity, string> => {
  const match = quantityPattern.exec(text)
  if (match === null) return Result.fail(expected)
  const [, sign, number, suffix] = match as unknown as [string, string, string, string]
  const magnitude = Number(number)
  let value: number
  const binary = binarySI[suffix]
  const decimal = decimalSI[suffix]
  if (binary !== undefined) {
    value = magnitude * binary
  } else if (decimal !== undefined) {
    value = magnitude * 10 ** decimal
  } else {
    const exponent = exponentPattern.exec(suffix)
    if (exponent === null) return Result.fail(`unknown suffix ${JSON.stringify(suffix)}: ${expected}`)
    const power = Number(exponent[1])
    // Kubernetes reads the exponent as a 32-bit integer.
    if (!Number.isSafeInteger(power) || Math.abs(power) > 2 ** 31 - 1) return Result.fail(`exponent out of range: ${expected}`)
    value = magnitude * 10 ** power
  }
  return Result.succeed({ text, value: sign === "-" ? -value : value })
}

/** A quantity for node capacity: valid syntax and not negative. */
export const parseCapacityQuantity = (text: string): Result.Result<Quantity, string> =>
  Result.flatMap(parseQuantity(text), (quantity) =>
    quantity.value < 0 ? Result.fail("must not be negative") : Result.succeed(quantity))
