/**
 * Calendar arithmetic for the timestamp readers that work by position (the Pod's, the claims
 * file's and sandboxd's): a restart reads tens of thousands of timestamps, and a pattern match
 * with a `Date` per timestamp was most of the time spent reading a 10,000-sandbox listing. The
 * count is the proleptic Gregorian one `Date` uses, so an instant read here is the one `Date.UTC`
 * and `setUTCFullYear` give (years 0–99 included, which `Date.UTC` alone maps onto the 1900s).
 */

/** The `n` decimal digits at `at` as a number; -1 when any of them is not a digit. */
export const digitsAt = (text: string, at: number, n: number): number => {
  let value = 0
  for (let i = at; i < at + n; i++) {
    const d = text.charCodeAt(i) - 0x30
    if (!(d >= 0 && d <= 9)) return -1
    value = value * 10 + d
  }
  return value
}

export const isLeapYear = (year: number): boolean => (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0

const monthLength: ReadonlyArray<number> = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
const daysBeforeMonth: ReadonlyArray<number> = [0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334]

/** Days in `month` (1–12) of `year`. */
export const daysInMonth = (year: number, month: number): number =>
  month === 2 && isLeapYear(year) ? 29 : monthLength[month - 1]!

/** Whether the fields name a real date and time of day (seconds 0–59: no leap second, as Go reads them). */
export const isCivilTime = (year: number, month: number, day: number, hour: number, minute: number, second: number): boolean =>
  year >= 0 && month >= 1 && month <= 12 && day >= 1 && day <= daysInMonth(year, month) &&
  hour >= 0 && hour <= 23 && minute >= 0 && minute <= 59 && second >= 0 && second <= 59

/** Days from 1970-01-01 to January 1st of `year`. */
const daysBeforeYear = (year: number): number => {
  const y = year - 1
  return 365 * (year - 1970) + (Math.floor(y / 4) - Math.floor(y / 100) + Math.floor(y / 400)) - 477
}

/** Milliseconds since the epoch of a UTC date and time the fields name (check them with `isCivilTime`). */
export const civilMillis = (
  year: number,
  month: number,
  day: number,
  hour: number,
  minute: number,
  second: number,
  millis: number
): number => {
  const days = daysBeforeYear(year) + daysBeforeMonth[month - 1]! + (month > 2 && isLeapYear(year) ? 1 : 0) + day - 1
  return ((days * 24 + hour) * 60 + minute) * 60_000 + second * 1000 + millis
}

/**
 * The instant (milliseconds since the epoch, UTC) of the 19 characters `YYYY-MM-DDTHH:MM:SS` at
 * `at`; NaN when they are not a real date and time in that form. What every reader by position
 * starts with: the Pod's times, the claims file's, sandboxd's deadlines.
 */
export const civilSecondsAt = (text: string, at: number): number => {
  if (
    text.charCodeAt(at + 4) !== 0x2d || text.charCodeAt(at + 7) !== 0x2d || text.charCodeAt(at + 10) !== 0x54 ||
    text.charCodeAt(at + 13) !== 0x3a || text.charCodeAt(at + 16) !== 0x3a
  ) return NaN
  const year = digitsAt(text, at, 4)
  const month = digitsAt(text, at + 5, 2)
  const day = digitsAt(text, at + 8, 2)
  const hour = digitsAt(text, at + 11, 2)
  const minute = digitsAt(text, at + 14, 2)
  const second = digitsAt(text, at + 17, 2)
  return isCivilTime(year, month, day, hour, minute, second) ? civilMillis(year, month, day, hour, minute, second, 0) : NaN
}
