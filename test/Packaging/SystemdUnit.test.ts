/**
 * packaging/vk-sandbox.service: an unprivileged, sandboxed service. The directives that matter are
 * read from the file; `systemd-analyze security --offline=true` rates the unit where that tool
 * exists (it needs no running systemd), and the test says SKIPPED where it does not.
 */
import { assert, describe, it } from "@effect/vitest"
import { spawnSync } from "node:child_process"
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { daemonFlags } from "../../src/Cli/Flags.ts"

const packaging = resolve(import.meta.dirname, "..", "..", "packaging")
const unitFile = join(packaging, "vk-sandbox.service")
const unit = readFileSync(unitFile, "utf8")

const openDropIn = readFileSync(join(packaging, "open-sandboxd.conf"), "utf8")

/** Every value of `key` in a unit file, in order (systemd reads repeated keys as a list). */
const valuesIn = (text: string, key: string): ReadonlyArray<string> =>
  text.split("\n").flatMap((line) => {
    const match = /^([A-Za-z]+)=(.*)$/.exec(line.trim())
    return match !== null && match[1] === key ? [match[2]!] : []
  })
const values = (key: string): ReadonlyArray<string> => valuesIn(unit, key)
const value = (key: string): string | undefined => values(key).at(-1)

/** The tool and whether it knows --offline (systemd 252 and later). */
const analyzer = (() => {
  const probe = spawnSync("systemd-analyze", ["security", "--help"], { encoding: "utf8" })
  if (probe.error !== undefined) return { available: false, why: "systemd-analyze is not installed" } as const
  if (!`${probe.stdout}${probe.stderr}`.includes("--offline")) {
    return { available: false, why: "this systemd-analyze has no --offline" } as const
  }
  return { available: true, why: "" } as const
})()
if (!analyzer.available) console.log(`systemd-analyze security: SKIPPED (${analyzer.why})`)

describe("the systemd unit", () => {
  it("runs as a dynamic unprivileged user with its state directory and no capabilities", () => {
    assert.strictEqual(value("DynamicUser"), "yes")
    assert.isUndefined(value("User"), "no fixed (root) user")
    assert.strictEqual(value("StateDirectory"), "vk-sandbox")
    assert.strictEqual(value("StateDirectoryMode"), "0700")
    assert.strictEqual(value("CapabilityBoundingSet"), "")
    assert.strictEqual(value("NoNewPrivileges"), "yes")
    assert.strictEqual(value("ProtectSystem"), "strict")
    assert.strictEqual(value("UMask"), "0077")
  })

  it("does not restart on a usage error (exit 2)", () => {
    assert.strictEqual(value("RestartPreventExitStatus"), "2")
    assert.strictEqual(value("Restart"), "always")
  })

  it("hands the kubeconfig and token over as credentials the daemon reads through flags", () => {
    assert.deepStrictEqual(values("LoadCredential").slice(0, 2), [
      "kubeconfig:/etc/vk-sandbox/kubeconfig",
      "sandboxd-token:/etc/vk-sandbox/sandboxd-token"
    ])
    const exec = value("ExecStart") ?? ""
    assert.include(exec, "--kubeconfig=%d/kubeconfig")
    assert.include(exec, "--sandboxd-token-file=%d/sandboxd-token")
  })

  it("hands vk-cocoon's root-only kubelet pair over as credentials, a missing one as a blank the daemon reads as absent (TLS-4)", () => {
    assert.deepStrictEqual(values("LoadCredential").slice(2), [
      "vk-cocoon-kubelet.crt:/etc/cocoon/vk/tls/vk-kubelet.crt",
      "vk-cocoon-kubelet.key:/etc/cocoon/vk/tls/vk-kubelet.key"
    ])
    // Without a default of the same name, a host without vk-cocoon could not start the unit. The
    // default must not be empty (systemd ignores an empty SetCredential=): one newline.
    assert.deepStrictEqual(values("SetCredential"), ["vk-cocoon-kubelet.crt:\\n", "vk-cocoon-kubelet.key:\\n"])
    assert.deepStrictEqual(values("Environment"), [
      "VK_COCOON_TLS_CERT=%d/vk-cocoon-kubelet.crt",
      "VK_COCOON_TLS_KEY=%d/vk-cocoon-kubelet.key"
    ])
    const flags = new Map(daemonFlags.flatMap((flag) => flag.env === undefined ? [] : [[flag.env, flag.name]]))
    assert.strictEqual(flags.get("VK_COCOON_TLS_CERT"), "vk-cocoon-tls-cert")
    assert.strictEqual(flags.get("VK_COCOON_TLS_KEY"), "vk-cocoon-tls-key")
    // The default paths are vk-cocoon's own, as the daemon's.
    const defaults = new Map(daemonFlags.map((flag) => [flag.name, flag.defaultText]))
    assert.strictEqual(defaults.get("vk-cocoon-tls-cert"), "/etc/cocoon/vk/tls/vk-kubelet.crt")
    assert.strictEqual(defaults.get("vk-cocoon-tls-key"), "/etc/cocoon/vk/tls/vk-kubelet.key")
  })

  it("the environment file sets only variables the daemon reads, and keeps state in the StateDirectory", () => {
    const known = new Set(daemonFlags.flatMap((flag) => flag.env === undefined ? [] : [flag.env]))
    const env = readFileSync(join(packaging, "env.example"), "utf8")
    const set = env.split("\n").flatMap((line) => {
      const match = /^#?([A-Z][A-Z0-9_]*)=(.*)$/.exec(line)
      return match === null ? [] : [[match[1]!, match[2]!, line.startsWith("#")] as const]
    })
    assert.isAbove(set.length, 5)
    for (const [name] of set) assert.isTrue(known.has(name), `${name} is a daemon variable`)
    // The unit passes the token file as a flag; the same variable here would only mislead.
    assert.isFalse(set.some(([name, , commented]) => name === "SANDBOXD_TOKEN_FILE" && !commented))
    const statePath = set.find(([name]) => name === "VK_STATE_PATH")?.[1] ?? ""
    assert.match(statePath, /^\/var\/lib\/vk-sandbox\/[^/]+$/)
  })

  it("never starts on an empty token file (the daemon would exit 1 and restart every 5 s): an open sandboxd is the explicit drop-in", () => {
    assert.deepStrictEqual(values("ConditionFileNotEmpty"), ["/etc/vk-sandbox/sandboxd-token"])
    assert.deepStrictEqual(values("ConditionPathExists"), ["/etc/vk-sandbox/kubeconfig"])
    for (const text of [unit, readFileSync(join(packaging, "..", "docs", "installation.md"), "utf8")]) {
      assert.notMatch(text, /leave the token file empty/i)
    }
    // The drop-in resets the conditions, the credentials and the command, and puts back all but the token's.
    assert.deepStrictEqual(valuesIn(openDropIn, "ConditionFileNotEmpty"), [""])
    assert.deepStrictEqual(valuesIn(openDropIn, "ConditionPathExists"), ["/etc/vk-sandbox/kubeconfig"])
    assert.deepStrictEqual(valuesIn(openDropIn, "LoadCredential"), ["", ...values("LoadCredential").filter((c) => !c.startsWith("sandboxd-token:"))])
    assert.deepStrictEqual(valuesIn(openDropIn, "ExecStart"), ["", "/usr/local/bin/vk-sandbox --kubeconfig=%d/kubeconfig"])
  })

  it("a rotated token needs a restart: the unit says so, as LoadCredential= copies it at start", () => {
    assert.match(unit, /never change while the service runs: a rotated token is taken\n# up by `systemctl restart vk-sandbox`/)
  })

  it.skipIf(!analyzer.available)("systemd reads the unit and the open-sandboxd drop-in without a complaint", () => {
    const dir = mkdtempSync(join(tmpdir(), "vk-unit-"))
    try {
      // The executable must exist for verify: this test's own node stands in for it.
      const here = (text: string) => text.replaceAll("/usr/local/bin/vk-sandbox", process.execPath)
      writeFileSync(join(dir, "vk-sandbox.service"), here(unit))
      const verify = () => spawnSync("systemd-analyze", ["verify", "--man=no", join(dir, "vk-sandbox.service")], { encoding: "utf8" })
      const plain = verify()
      assert.strictEqual(`${plain.stdout}${plain.stderr}`.trim(), "", "the unit alone")
      mkdirSync(join(dir, "vk-sandbox.service.d"))
      writeFileSync(join(dir, "vk-sandbox.service.d", "open-sandboxd.conf"), here(openDropIn))
      const withDropIn = verify()
      assert.strictEqual(`${withDropIn.stdout}${withDropIn.stderr}`.trim(), "", "with the drop-in (empty assignments reset lists)")
      // the check itself: a malformed credential in a drop-in is reported
      writeFileSync(join(dir, "vk-sandbox.service.d", "zz-bad.conf"), "[Service]\nLoadCredential=bad/id:/x\n")
      assert.include(`${verify().stderr}`, "not valid")
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it.skipIf(!analyzer.available)("systemd-analyze security rates its exposure at 2.0 or less", () => {
    const run = spawnSync("systemd-analyze", ["security", "--offline=true", "--no-pager", unitFile], { encoding: "utf8" })
    const output = `${run.stdout}${run.stderr}`
    // systemd says so when it ignores a line (an empty SetCredential=, a misspelt key).
    assert.notMatch(output, /Invalid syntax|[Uu]nknown key|ignoring/, output)
    const level = /Overall exposure level for [^:]+: ([0-9.]+)/.exec(output)
    assert.isNotNull(level, output)
    const exposure = Number(level?.[1])
    console.log(`systemd-analyze security: exposure ${exposure}`)
    assert.isAtMost(exposure, 2.0, output)
  })
})
