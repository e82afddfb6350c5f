/**
 * The kernel settings the kubelet sets go back to the machine's own values once the last node has
 * stopped, also when two suites' nodes overlap on one machine (./Tunables.ts). Played on a
 * directory standing in for /proc/sys, with the kubelets as flags.
 */
import { assert, describe, it } from "@effect/vitest"
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { KernelTunables, nodeTunables, type TunablesPlace } from "./Tunables.ts"

const original = { "vm/overcommit_memory": "0", "kernel/panic": "0", "kernel/panic_on_oops": "0" } as Record<string, string>
const kubeletSets = { "vm/overcommit_memory": "1", "kernel/panic": "10", "kernel/panic_on_oops": "1" } as Record<string, string>

/** A stand-in machine: its settings, and which of two nodes' kubelets run. */
const standIn = () => {
  const dir = mkdtempSync(join(tmpdir(), "vk-tunables-"))
  const sysDir = join(dir, "sys")
  const write = (values: Record<string, string>) => {
    for (const [key, value] of Object.entries(values)) {
      mkdirSync(dirname(join(sysDir, key)), { recursive: true })
      writeFileSync(join(sysDir, key), `${value}\n`)
    }
  }
  write(original)
  const running = new Set<string>()
  const placeOf = (node: string): TunablesPlace => ({
    sysDir,
    record: join(dir, "record.json"),
    otherKubeletRuns: () => [...running].some((other) => other !== node)
  })
  const node = (name: string) => {
    const tunables = nodeTunables(placeOf(name))
    return {
      start: () => (tunables.record(), running.add(name), write(kubeletSets)),
      stop: () => (running.delete(name), tunables.restore()),
      /** The run killed with its kubelet: no teardown. */
      kill: () => running.delete(name)
    }
  }
  const values = () =>
    Object.fromEntries(Object.keys(original).map((key) => [key, readFileSync(join(sysDir, key), "utf8").trim()]))
  return { dir, node, values, recordLeft: () => existsSync(join(dir, "record.json")), done: () => rmSync(dir, { recursive: true, force: true }) }
}

describe("the kubelet's kernel settings", () => {
  it("covers what the kubelet sets", () => {
    for (const key of Object.keys(kubeletSets)) assert.include(KernelTunables, key)
  })

  it("one node: the machine's values back when it stops, no record left", () => {
    const machine = standIn()
    try {
      const a = machine.node("a")
      a.start()
      assert.deepStrictEqual(machine.values(), kubeletSets)
      a.stop()
      assert.deepStrictEqual(machine.values(), original)
      assert.isFalse(machine.recordLeft())
    } finally {
      machine.done()
    }
  })

  it("two nodes overlapping: left as the kubelet wants while one runs, the machine's values back after the last", () => {
    const machine = standIn()
    try {
      const a = machine.node("a")
      const b = machine.node("b")
      a.start()
      b.start()
      a.stop()
      assert.deepStrictEqual(machine.values(), kubeletSets, "b's kubelet still runs")
      b.stop()
      assert.deepStrictEqual(machine.values(), original)
      assert.isFalse(machine.recordLeft())
    } finally {
      machine.done()
    }
  })

  it("a run killed before its teardown: the next run restores the machine's values", () => {
    const machine = standIn()
    try {
      const killed = machine.node("killed")
      killed.start()
      killed.kill()
      const next = machine.node("next")
      next.start()
      next.stop()
      assert.deepStrictEqual(machine.values(), original)
      assert.isFalse(machine.recordLeft())
    } finally {
      machine.done()
    }
  })
})
