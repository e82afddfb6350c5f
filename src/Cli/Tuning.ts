/**
 * `VK_SANDBOX_TUNING_OFF`: the performance devices to switch off (`Services/Tuning.ts`), names
 * joined by `,`. Read once at startup; unset or empty leaves every device on. An unknown name
 * stops the daemon (exit 1): a mistyped switch must not pass silently as no switch.
 */
import { Result } from "effect"
import { type TuningDevice, tuningDevices } from "../Services/Tuning.ts"
import type { Environment } from "./ParseConfig.ts"

export const TUNING_OFF_ENV = "VK_SANDBOX_TUNING_OFF"

const isDevice = (name: string): name is TuningDevice => (tuningDevices as ReadonlyArray<string>).includes(name)

export const tuningOffFromEnvironment = (env: Environment): Result.Result<ReadonlySet<TuningDevice>, string> => {
  const off = new Set<TuningDevice>()
  for (const raw of (env[TUNING_OFF_ENV] ?? "").split(",")) {
    const name = raw.trim()
    if (name === "") continue
    if (!isDevice(name)) return Result.fail(`unknown device ${JSON.stringify(name)} (known: ${tuningDevices.join(", ")})`)
    off.add(name)
  }
  return Result.succeed(off)
}
