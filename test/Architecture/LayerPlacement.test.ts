/**
 * Where a layer lives (docs/architecture.md): in src/Layers/ unless it is built from Programs, then
 * beside them in src/Programs/. The import rules keep Programs out of Layers/; this test keeps
 * layers that need no Program out of Programs/: a file there that builds a layer of one of our
 * services must import a Program it is made of. A decorator (a layer that takes the service and
 * gives it back wrapped) lives with its concern and is not counted.
 */
import { assert, describe, it } from "@effect/vitest"
import * as path from "node:path"
import { readSource, sourceFiles } from "../support/Sources.ts"

/** The relative imports of `file` (as `src/...` paths) and the names it imports from src/Services/. */
const importsOf = (file: string, text: string) => {
  const modules: Array<string> = []
  const services = new Set<string>()
  for (const match of text.matchAll(/import\s+(?:type\s+)?\{([^}]*)\}\s+from\s+"(\.[^"]+)"|import\s+\*\s+as\s+\w+\s+from\s+"(\.[^"]+)"/g)) {
    const target = path.posix.normalize(path.posix.join(path.posix.dirname(file), match[2] ?? match[3]!))
    modules.push(target)
    if (match[1] !== undefined && target.startsWith("src/Services/")) {
      for (const name of match[1].split(",")) {
        const bare = name.trim().replace(/^type\s+/, "")
        if (bare !== "") services.add(bare)
      }
    }
  }
  return { modules, services }
}

/** The services of ours `text` builds a layer of, decorators left out. */
export const serviceLayersIn = (text: string, services: ReadonlySet<string>): ReadonlyArray<string> =>
  [...text.matchAll(/Layer\.(?:effect|succeed|scoped)\(\s*(\w+)\s*,\s*(Effect\.map\(\s*(\w+)\.use\()?/g)]
    .filter((match) => services.has(match[1]!) && match[3] !== match[1])
    .map((match) => match[1]!)

/** `file: Service` for each layer of a service in src/Programs/ whose file imports no other Program. */
export const misplaced = (file: string, text: string): ReadonlyArray<string> => {
  const { modules, services } = importsOf(file, text)
  const layers = serviceLayersIn(text, services)
  const fromPrograms = modules.some((module) => module.startsWith("src/Programs/") && module !== file)
  return fromPrograms ? [] : layers.map((service) => `${file}: ${service}`)
}

describe("where a layer lives", () => {
  it("a layer of a service in src/Programs/ is built from a Program it imports", () => {
    const found = sourceFiles("src/Programs").flatMap((file) => misplaced(file, readSource(file)))
    assert.deepStrictEqual(found, [])
  })

  it("the scan sees the Programs layers there are, and no decorator", () => {
    // The check above passes trivially if the scan finds no layer: show it finds these.
    const layers = sourceFiles("src/Programs").flatMap((file) => {
      const text = readSource(file)
      return serviceLayersIn(text, importsOf(file, text).services).map((service) => `${file}: ${service}`)
    })
    for (
      const layer of [
        "src/Programs/Provider/ProviderLive.ts: PodLifecycle",
        "src/Programs/Authorization/OwnerResolverKube.ts: OwnerResolver",
        "src/Programs/Node/NodeController.ts: NodeController",
        "src/Programs/Kubelet/KubeletServer.ts: KubeletServer"
      ]
    ) assert.include(layers, layer)
    assert.isFalse(layers.some((layer) => layer.startsWith("src/Programs/Observability/Instrument.ts")), "decorators are not counted")
  })

  it("a layer made of no Program is reported; one importing a Program is not", () => {
    const layer = `import { Clock } from "../../Services/Clock.ts"\nexport const layer = Layer.succeed(Clock, Clock.of({}))\n`
    assert.deepStrictEqual(misplaced("src/Programs/X/Clock.ts", layer), ["src/Programs/X/Clock.ts: Clock"])
    assert.deepStrictEqual(misplaced("src/Programs/X/Clock.ts", `import { tick } from "./Tick.ts"\n${layer}`), [])
  })
})
