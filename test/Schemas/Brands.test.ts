/**
 * A brand is made only by its Schema or by the one constructor beside it: each `Schema.brand("X")`
 * is declared in one module of src/, and no other module of src/ names X in a type assertion
 * (`as X`, `as unknown as X`, `as ReadonlyMap<X, …>`, `<X>value`), which would make an X the
 * Schema never saw.
 */
import { assert, describe, it } from "@effect/vitest"
import { Option, Schema } from "effect"
import fc from "fast-check"
import { ClaimId, claimIdOfText, PodKey, podKeyOfText } from "../../src/Schemas/Ids.ts"
import { readSource, sourceFiles } from "../support/Sources.ts"

/** The text without its comments (a `//` inside a string is rare enough in src/ to cut a line short). */
const code = (text: string): string => text.replace(/\/\*[\s\S]*?\*\//g, "").replace(/\/\/.*$/gm, "")

/** The brands a module declares: the names in its `Schema.brand("…")` calls. */
export const declaredBrands = (text: string): ReadonlyArray<string> =>
  [...code(text).matchAll(/\bSchema\.brand\(\s*["']([^"']+)["']/g)].map((match) => match[1]!)

/** Each type assertion in `text` whose type names one of `brands` (up to the end of the type). */
export const brandCasts = (text: string, brands: ReadonlyArray<string>): ReadonlyArray<string> => {
  if (brands.length === 0) return []
  const named = new RegExp(`\\b(?:${brands.join("|")})\\b`)
  const source = code(text)
  const asCasts = [...source.matchAll(/\bas\s+([A-Za-z_][\w.]*(?:\s*<[^;\n=]*>)?(?:\s*\[\])?(?:\s+as\s+[A-Za-z_][\w.]*(?:\s*<[^;\n=]*>)?)?)/g)]
    .map((match) => match[1]!)
  // `<X>value`: an angle bracket after an operator or keyword, not after a name (a generic call)
  const angleCasts = [...source.matchAll(/(?:^|[=(,:?!&|{[;]|\breturn|\byield\*?)\s*<([^<>;\n]*(?:<[^<>;\n]*>[^<>;\n]*)*)>\s*[\w"'`([]/gm)]
    .map((match) => `<${match[1]!}>`)
  return [...asCasts, ...angleCasts].filter((type) => named.test(type))
}

const files = sourceFiles("src").map((file) => ({ file, text: readSource(file) }))
const owners = files.flatMap(({ file, text }) => declaredBrands(text).map((brand) => ({ brand, file })))
const brands = [...new Set(owners.map((owner) => owner.brand))]

describe("brands are made only by their Schema or their owner's constructor", () => {
  it("src/ declares its brands, each once", () => {
    assert.includeMembers(brands, ["PodKey", "ClaimId"])
    assert.deepStrictEqual(owners.length, brands.length, JSON.stringify(owners))
  })

  it("no module but a brand's own casts to it", () => {
    const casts = files.flatMap(({ file, text }) => {
      const others = brands.filter((brand) => !owners.some((owner) => owner.brand === brand && owner.file === file))
      return brandCasts(text, others).map((type) => `${file}: as ${type}`)
    })
    assert.deepStrictEqual(casts, [])
  })

  it("each constructor takes exactly what its Schema decodes, and gives the same value", () => {
    // A check added to a brand's Schema and not to its constructor fails here.
    const decodeKey = Schema.decodeUnknownOption(PodKey)
    const decodeId = Schema.decodeUnknownOption(ClaimId)
    fc.assert(
      fc.property(fc.oneof(fc.string({ unit: "binary" }), fc.constantFrom("", "ns/name", "sb_0123456789abcdef")), (text) => {
        assert.deepStrictEqual(decodeKey(text), Option.some(podKeyOfText(text)))
        assert.deepStrictEqual(decodeId(text), Option.some(claimIdOfText(text)))
      })
    )
  })

  it("the scan catches what it is for", () => {
    const ids = ["PodKey", "ClaimId"]
    assert.deepStrictEqual(brandCasts("const id = text as ClaimId\n", ids), ["ClaimId"])
    assert.deepStrictEqual(brandCasts("f(text as unknown as PodKey)\n", ids), ["unknown as PodKey"])
    assert.deepStrictEqual(brandCasts("return map as ReadonlyMap<PodKey, string>\n", ids), ["ReadonlyMap<PodKey, string>"])
    assert.deepStrictEqual(brandCasts("const keys = list as PodKey[]\n", ids), ["PodKey[]"])
    assert.deepStrictEqual(brandCasts("const id = <ClaimId>text\nreturn <ReadonlyArray<PodKey>>(keys)\n", ids), ["<ClaimId>", "<ReadonlyArray<PodKey>>"])
    assert.deepStrictEqual(brandCasts("const ids = new Set<ClaimId>()\nconst k = Option.some<PodKey>(key)\n", ids), [])
    // other casts, types named in annotations, comments and prose
    assert.deepStrictEqual(brandCasts("const n = value as number\nconst k: PodKey = key\n", ids), [])
    assert.deepStrictEqual(brandCasts("// read as PodKey\n/** kept as ClaimId */\n", ids), [])
    assert.deepStrictEqual(declaredBrands('export const Id = Schema.String.pipe(Schema.brand("Id"))\n'), ["Id"])
    assert.deepStrictEqual(declaredBrands('// Schema.brand("Old")\n'), [])
  })
})
