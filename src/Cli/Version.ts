/**
 * `--version` (CFG-6 — --version does nothing else): `vk-sandbox <version> (rev=<revision>
 * built=<time>)`. The version comes from package.json; revision and build time from
 * $VK_SANDBOX_REVISION / $VK_SANDBOX_BUILT_AT when set and non-empty, else from `build-info.json`
 * at the package root (`{"revision": …, "builtAt": …}`, written by an image build) when present,
 * else `unknown`.
 */
import { Effect, FileSystem, Option, Schema } from "effect"
import { fileURLToPath } from "node:url"
import type { Environment } from "./ParseConfig.ts"

import type { BuildInfoShape } from "../Services/BuildInfo.ts"

export type BuildInfo = BuildInfoShape

export const formatVersion = (info: BuildInfo): string =>
  `vk-sandbox ${info.version} (rev=${info.revision} built=${info.builtAt})`

// Same relative path from src/Cli/*.ts and from the built dist/Cli/*.js.
const packageRoot = new URL("../../", import.meta.url)

const PackageJson = Schema.Struct({ version: Schema.String })
const BuildInfoFile = Schema.Struct({
  revision: Schema.optionalKey(Schema.String),
  builtAt: Schema.optionalKey(Schema.String)
})

const readJson = <S extends Schema.Top>(fs: FileSystem.FileSystem, name: string, schema: S) =>
  fs.readFileString(fileURLToPath(new URL(name, packageRoot))).pipe(
    Effect.flatMap(Schema.decodeUnknownEffect(Schema.fromJsonString(schema))),
    Effect.option
  )

const nonEmpty = (value: string | undefined): Option.Option<string> =>
  value === undefined || value === "" ? Option.none() : Option.some(value)

export const readBuildInfo = Effect.fnUntraced(function*(env: Environment) {
  const fs = yield* FileSystem.FileSystem
  const pkg = yield* readJson(fs, "package.json", PackageJson)
  const file = yield* readJson(fs, "build-info.json", BuildInfoFile)
  const fromFile = (key: "revision" | "builtAt") => Option.flatMap(file, (info) => nonEmpty(info[key]))
  const info: BuildInfo = {
    // "dev" as the reference prints for an unstamped build.
    version: Option.getOrElse(Option.map(pkg, (p) => p.version), () => "dev"),
    revision: Option.getOrElse(Option.orElse(nonEmpty(env["VK_SANDBOX_REVISION"]), () => fromFile("revision")), () => "unknown"),
    builtAt: Option.getOrElse(Option.orElse(nonEmpty(env["VK_SANDBOX_BUILT_AT"]), () => fromFile("builtAt")), () => "unknown")
  }
  return info
})
