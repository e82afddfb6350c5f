/**
 * Every service tag of the daemon (`Context.Service`, `Context.Reference`) is declared in
 * src/Services/, beside its interface and errors, so a reader finds every seam in one folder and
 * a program or layer never owns a seam others depend on. No exceptions: an implementation exports
 * its layer as a function (`layer`), never as a static on the tag, so the tag needs nothing from it.
 */
import { assert, describe, it } from "@effect/vitest"
import { readSource, sourceFiles } from "../support/Sources.ts"

/** `file: Name` for every tag declared in `text`. */
export const tagsIn = (file: string, text: string): ReadonlyArray<string> => [
  ...[...text.matchAll(/class (\w+) extends Context\.Service\b/g)].map((match) => `${file}: ${match[1]}`),
  ...[...text.matchAll(/const (\w+)\s*=\s*Context\.Reference\b/g)].map((match) => `${file}: ${match[1]}`)
]

describe("service tags", () => {
  it("are declared in src/Services/ and nowhere else in src/", () => {
    const outside = sourceFiles("src")
      .filter((file) => !file.startsWith("src/Services/"))
      .flatMap((file) => tagsIn(file, readSource(file)))
    assert.deepStrictEqual(outside, [])
  })

  it("src/Services/ declares the kubelet server's and the node controller's tags", () => {
    // The scan above passes trivially if it finds nothing anywhere: show it finds these.
    const inServices = sourceFiles("src/Services")
      .flatMap((file) => tagsIn(file, readSource(file)))
    for (
      const tag of [
        "src/Services/KubeletServer.ts: KubeletPods",
        "src/Services/KubeletServer.ts: KubeletServer",
        "src/Services/NodeController.ts: NodeController",
        "src/Services/NodeController.ts: NodeHealth"
      ]
    ) assert.include(inServices, tag)
  })

  it("the scan finds both kinds of tag", () => {
    assert.deepStrictEqual(
      tagsIn("x.ts", "export class A extends Context.Service<A, {}>()(\"a\") {}\nexport const B = Context.Reference<number>(\"b\", {})"),
      ["x.ts: A", "x.ts: B"]
    )
  })
})
