/**
 * Every service tag of the daemon (`Context.Service`, `Context.Reference`) is declared in
 * src/Services/, beside its interface and errors, so a reader finds every seam in one folder and
 * a program or layer never owns a seam others depend on. The kubelet server's and the node
 * controller's tags still sit with their implementations (each class carries its live layer as a
 * static); they are listed here so that no further tag joins them.
 */
import { assert, describe, it } from "@effect/vitest"
import { readdirSync, readFileSync } from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"

const root = fileURLToPath(new URL("../..", import.meta.url))

const sources = (dir: string): ReadonlyArray<string> =>
  readdirSync(path.join(root, dir), { withFileTypes: true }).flatMap((entry) => {
    const relative = `${dir}/${entry.name}`
    return entry.isDirectory() ? sources(relative) : entry.name.endsWith(".ts") ? [relative] : []
  })

/** `file: Name` for every tag declared in `text`. */
export const tagsIn = (file: string, text: string): ReadonlyArray<string> => [
  ...[...text.matchAll(/class (\w+) extends Context\.Service\b/g)].map((match) => `${file}: ${match[1]}`),
  ...[...text.matchAll(/const (\w+)\s*=\s*Context\.Reference\b/g)].map((match) => `${file}: ${match[1]}`)
]

const stillOutside = [
  "src/Programs/Kubelet/KubeletServer.ts: KubeletPods",
  "src/Programs/Kubelet/KubeletServer.ts: KubeletServer",
  "src/Programs/Node/NodeController.ts: NodeController",
  "src/Programs/Node/NodeController.ts: NodeHealth"
]

describe("service tags", () => {
  it("are declared in src/Services/ (the four listed ones excepted)", () => {
    const outside = sources("src")
      .filter((file) => !file.startsWith("src/Services/"))
      .flatMap((file) => tagsIn(file, readFileSync(path.join(root, file), "utf8")))
    assert.deepStrictEqual([...outside].sort(), [...stillOutside].sort())
  })

  it("the scan finds both kinds of tag", () => {
    assert.deepStrictEqual(
      tagsIn("x.ts", "export class A extends Context.Service<A, {}>()(\"a\") {}\nexport const B = Context.Reference<number>(\"b\", {})"),
      ["x.ts: A", "x.ts: B"]
    )
  })
})
