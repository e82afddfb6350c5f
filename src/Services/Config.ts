/**
 * The validated daemon configuration as a service: `src/Cli/` builds it from flags and the
 * environment, tests with `testConfig` (testkit/Config.ts; the shape is in `Schemas/Config.ts`).
 */
import { Context, Layer } from "effect"
import type { AppConfigShape } from "../Schemas/Config.ts"

export class AppConfig extends Context.Service<AppConfig, AppConfigShape>()("vk-sandbox/AppConfig") {
  static readonly layer = (config: AppConfigShape) => Layer.succeed(AppConfig, config)
}
