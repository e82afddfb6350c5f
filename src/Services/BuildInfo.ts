/**
 * Which build is running: the package version, and the source revision and build time stamped by
 * an image build (`unknown` when not stamped). Read once at startup by the command line; used by
 * the startup log line and `vk_sandbox_build_info`.
 */
import { Context } from "effect"

export interface BuildInfoShape {
  readonly version: string
  readonly revision: string
  readonly builtAt: string
}

export class BuildInfo extends Context.Service<BuildInfo, BuildInfoShape>()("vk-sandbox/BuildInfo") {}
