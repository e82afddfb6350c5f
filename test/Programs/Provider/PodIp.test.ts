import { assert, describe, it } from "@effect/vitest"
import { Option } from "effect"
import { ipFromOwnerAddr, resolvePodIp } from "../../../src/Programs/Provider/PodIp.ts"

describe("Pod IP rule", () => {
  const vectors: ReadonlyArray<readonly [string, string | undefined]> = [
    ["10.0.0.5:7777", "10.0.0.5"],
    ["10.0.0.5", "10.0.0.5"],
    ["[fd00::1]:7777", "fd00::1"],
    ["[fd00::1]", "fd00::1"],
    ["fd00::1", "fd00::1"],
    ["::1", "::1"],
    ["http://10.0.0.7:7777", "10.0.0.7"],
    ["https://[fd00::2]:8443", "fd00::2"],
    ["http://10.0.0.8", "10.0.0.8"],
    ["http://sandboxd.local:7777", undefined],
    [":7777", undefined],
    ["sandboxd.local:7777", undefined],
    ["sandboxd.local", undefined],
    ["", undefined],
    ["10.0.0.5:", undefined],
    ["10.0.0.300:7777", undefined],
    ["not an address", undefined]
  ]
  for (const [addr, expected] of vectors) {
    it(`owner_addr ${JSON.stringify(addr)} → ${expected ?? "no IP"}`, () => {
      assert.deepStrictEqual(ipFromOwnerAddr(addr), expected === undefined ? Option.none() : Option.some(expected))
    })
  }

  it("falls back to the node IP, then to nothing", () => {
    assert.deepStrictEqual(resolvePodIp("10.0.0.5:7777", "192.168.1.9"), { _tag: "OwnerAddr", ip: "10.0.0.5" })
    assert.deepStrictEqual(resolvePodIp("sandboxd.local:7777", "192.168.1.9"), { _tag: "NodeIp", ip: "192.168.1.9" })
    assert.deepStrictEqual(resolvePodIp(":7777", ""), { _tag: "None" })
  })
})
