/**
 * The prepare-state init container's command as the chart renders it, run as the chart runs it
 * (uid 0 with CAP_CHOWN as its only capability, through setpriv) on directories and files laid out
 * as a host has them: a state directory left by a root-run release, a fresh one, the host's
 * root-owned sandboxd token file (DEP-2 — each host's own sandboxd token by default) and
 * vk-cocoon's root-only kubelet pair (TLS-4 — vk-cocoon's certificate is reused when it is usable).
 * Needs root and setpriv.
 */
import { assert, describe, it } from "@effect/vitest"
import { spawnSync } from "node:child_process"
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { at, strings } from "../support/Rendered.ts"
import { helmBin, podOf, render, withToken } from "./render.ts"

const isRoot = process.getuid?.() === 0
const hasSetpriv = spawnSync("setpriv", ["--version"]).error === undefined
const skip = helmBin === "" ? "no helm" : !isRoot ? "not root" : !hasSetpriv ? "no setpriv" : ""
if (skip !== "" && helmBin !== "") console.log(`prepare-state as root: SKIPPED (${skip})`)

/** The rendered command: `node -e <script> --` and its arguments (the defaults: the host's token file). */
const command = skip === "" ? strings(at(podOf(render([]).docs), "initContainers", 0, "command")) : []
const onlyChown = ["--inh-caps=-all", "--ambient-caps=-all", "--bounding-set=-all,+chown"]
/** The script with arguments of a test's own, as the chart runs it: uid 0, CAP_CHOWN alone. */
const runPrepare = (args: ReadonlyArray<string>) =>
  spawnSync("setpriv", [...onlyChown, "--", process.execPath, ...command.slice(1, 4), "--owner", "65532:65532", ...args], { encoding: "utf8" })
/** A script run as the daemon's user (65532, no other group), with `arg` as process.argv[1]. */
const asDaemon = (script: string, arg: string) =>
  spawnSync("setpriv", ["--reuid=65532", "--regid=65532", "--clear-groups", "--", process.execPath, "-e", script, arg], { encoding: "utf8" })
const inTempRoot = (body: (root: string) => void) => {
  const root = mkdtempSync(join(tmpdir(), "vk-prepare-"))
  chmodSync(root, 0o711) // as /var/lib or /etc: others may pass through
  try {
    body(root)
  } finally {
    rmSync(root, { recursive: true, force: true })
  }
}

/**
 * The upgrade from a root-run release: a root-owned state directory handed over; then the
 * daemon's uid reads and rewrites the claims file.
 */
describe.skipIf(skip !== "")("state directory upgrade", () => {
  const prepare = (dir: string) => runPrepare(["--state", dir])

  it("a root-owned 0700 directory with a 0600 claims file becomes the daemon's, modes kept, content intact", () => {
    const root = mkdtempSync(join(tmpdir(), "vk-upgrade-"))
    chmodSync(root, 0o711) // as /var/lib: others may pass through to the state directory
    try {
      const dir = join(root, "vk-sandbox")
      mkdirSync(dir, { mode: 0o700 })
      writeFileSync(join(dir, "claims.json"), "{\"version\":1}\n", { mode: 0o600 })
      assert.notStrictEqual(asDaemon("require('fs').readFileSync(process.argv[1] + '/claims.json')", dir).status, 0, "unreadable before")
      // Without CAP_CHOWN the command fails: the capability is what it needs.
      const denied = spawnSync("setpriv", ["--inh-caps=-all", "--bounding-set=-all", "--", process.execPath, ...command.slice(1, 4), "--owner", "65532:65532", "--state", dir], {
        encoding: "utf8"
      })
      assert.strictEqual(denied.status, 1)
      assert.match(denied.stderr, /^prepare-state: .*EPERM/)

      const first = prepare(dir)
      assert.strictEqual(first.status, 0, first.stderr)
      for (const [path, mode] of [[dir, 0o700], [join(dir, "claims.json"), 0o600]] as const) {
        const stat = statSync(path)
        assert.deepStrictEqual([stat.uid, stat.gid, stat.mode & 0o777], [65532, 65532, mode], path)
      }
      const rewrite = asDaemon(
        "const fs = require('fs'); const f = process.argv[1] + '/claims.json'; const t = fs.readFileSync(f, 'utf8'); " +
          "fs.writeFileSync(f + '.tmp', t, { mode: 0o600 }); fs.renameSync(f + '.tmp', f); process.stdout.write(t)",
        dir
      )
      assert.strictEqual(rewrite.status, 0, rewrite.stderr)
      assert.strictEqual(rewrite.stdout, "{\"version\":1}\n")
      // Idempotent: a restart of the Pod changes nothing.
      const again = prepare(dir)
      assert.strictEqual(again.status, 0, again.stderr)
      assert.include(again.stdout, "(0 entries changed)")
    } finally {
      rmSync(root, { recursive: true, force: true })
    }
  })

  it("a fresh directory as the kubelet creates it (root, 0755) becomes the daemon's, 0700", () => {
    const root = mkdtempSync(join(tmpdir(), "vk-upgrade-"))
    chmodSync(root, 0o711) // as /var/lib: others may pass through to the state directory
    try {
      const dir = join(root, "vk-sandbox")
      mkdirSync(dir)
      chmodSync(dir, 0o755)
      const run = prepare(dir)
      assert.strictEqual(run.status, 0, run.stderr)
      const stat = statSync(dir)
      assert.deepStrictEqual([stat.uid, stat.gid, stat.mode & 0o777], [65532, 65532, 0o700])
      assert.strictEqual(asDaemon("require('fs').writeFileSync(process.argv[1] + '/claims.json', '{}', { mode: 0o600 })", dir).status, 0)
    } finally {
      rmSync(root, { recursive: true, force: true })
    }
  })
})

/**
 * The host's own sandboxd token (DEP-2): root-owned 0600 in a root 0700 directory, copied for the
 * daemon's user into a volume as the kubelet makes an emptyDir; the host file is only read. A new
 * Pod copies again, which is how a rotated token is taken up.
 */
describe.skipIf(skip !== "")("the host's token file", () => {
  const layout = (root: string, volumeMode: number, volumeGroup: number) => {
    const etc = join(root, "etc-vk-sandbox")
    mkdirSync(etc, { mode: 0o700 })
    const host = join(etc, "sandboxd-token")
    writeFileSync(host, "root-token-1\n", { mode: 0o600 })
    const volume = join(root, "run")
    mkdirSync(volume)
    chmodSync(volume, volumeMode)
    spawnSync("chown", [`0:${volumeGroup}`, volume])
    return { host, copy: join(volume, "sandboxd-token") }
  }
  const readAsDaemon = (path: string) => asDaemon("process.stdout.write(require('fs').readFileSync(process.argv[1], 'utf8'))", path)

  for (const [what, mode, group] of [["an emptyDir", 0o777, 0], ["an emptyDir with fsGroup", 0o2777, 65532]] as const) {
    it(`into ${what}: the daemon reads its copy, 0400; the host file stays root's, 0600, unreadable to the daemon`, () =>
      inTempRoot((root) => {
        const { host, copy } = layout(root, mode, group)
        assert.notStrictEqual(readAsDaemon(host).status, 0, "the host file is not the daemon's to read")
        const run = runPrepare(["--copy", host, copy])
        assert.strictEqual(run.status, 0, run.stderr)
        assert.notInclude(run.stdout + run.stderr, "root-token-1", "never printed")
        const stat = statSync(copy)
        assert.deepStrictEqual([stat.uid, stat.gid, stat.mode & 0o777], [65532, 65532, 0o400])
        assert.strictEqual(readAsDaemon(copy).stdout, "root-token-1\n")
        const hostStat = statSync(host)
        assert.deepStrictEqual([hostStat.uid, hostStat.gid, hostStat.mode & 0o777], [0, 0, 0o600], "the host file as it was")
        assert.strictEqual(readFileSync(host, "utf8"), "root-token-1\n")
        assert.notStrictEqual(readAsDaemon(host).status, 0)
      }))
  }

  it("rotation: the copy keeps the token the Pod started with; the next Pod's copy has the new one", () =>
    inTempRoot((root) => {
      const { host, copy } = layout(root, 0o2777, 65532)
      assert.strictEqual(runPrepare(["--copy", host, copy]).status, 0)
      writeFileSync(host, "root-token-2\n")
      assert.strictEqual(readAsDaemon(copy).stdout, "root-token-1\n", "until the Pod restarts")
      // The next Pod: a fresh volume, or (were it kept) a copy written over the daemon's 0400 file.
      const again = runPrepare(["--copy", host, copy])
      assert.strictEqual(again.status, 0, again.stderr)
      assert.strictEqual(readAsDaemon(copy).stdout, "root-token-2\n")
      const stat = statSync(copy)
      assert.deepStrictEqual([stat.uid, stat.gid, stat.mode & 0o777], [65532, 65532, 0o400])
    }))

  it("no host file, or not a file: exit 1 with one line naming it, nothing written", () =>
    inTempRoot((root) => {
      const { copy } = layout(root, 0o777, 0)
      for (const [host, reason] of [[join(root, "missing"), "ENOENT"], [root, "not a regular file"]] as const) {
        const run = runPrepare(["--copy", host, copy])
        assert.strictEqual(run.status, 1)
        assert.match(run.stderr, /^prepare-state: [^\n]+\n$/)
        assert.include(run.stderr, reason)
        assert.throws(() => statSync(copy))
      }
      const usage = runPrepare(["--copy", "relative", copy])
      assert.strictEqual(usage.status, 1)
      assert.include(usage.stderr, "usage:")
    }))
})

/**
 * The copy of vk-cocoon's kubelet pair (TLS-4): the root-only pair read, a copy only the daemon's
 * uid can read written, vk-cocoon's files left as they were.
 */
describe.skipIf(skip !== "")("kubelet pair copy", () => {
  const statOf = (path: string) => {
    const stat = statSync(path)
    return [stat.uid, stat.gid, stat.mode & 0o777]
  }
  const readAsDaemon = (path: string) => asDaemon("process.stdout.write(require('fs').readFileSync(process.argv[1], 'utf8'))", path)

  it("copies vk-cocoon's root-only pair for the daemon's user alone, leaves the host's as it was, and drops a half that went away", () =>
    inTempRoot((root) => {
      const state = join(root, "state")
      mkdirSync(state, { mode: 0o700 })
      // vk-cocoon's layout: a root-only directory, the key 0600.
      const host = join(root, "cocoon-tls")
      mkdirSync(host, { mode: 0o700 })
      writeFileSync(join(host, "vk-kubelet.crt"), "CERT\n", { mode: 0o644 })
      writeFileSync(join(host, "vk-kubelet.key"), "KEY\n", { mode: 0o600 })
      // The memory volume as the kubelet makes it: open to all.
      const dest = join(root, "tls")
      mkdirSync(dest)
      chmodSync(dest, 0o777)
      assert.notStrictEqual(readAsDaemon(join(host, "vk-kubelet.key")).status, 0, "the daemon cannot read vk-cocoon's key itself")

      const run = (mode: string) => runPrepare(["--state", state, "--pair", mode, join(host, "vk-kubelet.crt"), join(host, "vk-kubelet.key"), dest])
      assert.strictEqual(command[command.indexOf("--pair") + 1], "optional", "the chart's default: vk-cocoon's pair, optional")
      for (const attempt of ["first", "again, over the earlier copy"]) {
        const copied = run("optional")
        assert.strictEqual(copied.status, 0, `${attempt}: ${copied.stderr}`)
        for (const [name, content] of [["tls.crt", "CERT\n"], ["tls.key", "KEY\n"]] as const) {
          assert.deepStrictEqual(statOf(join(dest, name)), [65532, 65532, 0o400], `${attempt}: ${name}`)
          assert.strictEqual(readAsDaemon(join(dest, name)).stdout, content, `${attempt}: ${name}`)
        }
      }
      assert.deepStrictEqual(readdirSync(dest).sort(), ["tls.crt", "tls.key"], "no temporary left")
      assert.deepStrictEqual(statOf(host), [0, 0, 0o700])
      assert.deepStrictEqual(statOf(join(host, "vk-kubelet.key")), [0, 0, 0o600])
      assert.strictEqual(readFileSync(join(host, "vk-kubelet.key"), "utf8"), "KEY\n")

      // vk-cocoon's key gone: no stale copy is served; the daemon finds the pair incomplete.
      rmSync(join(host, "vk-kubelet.key"))
      const optional = run("optional")
      assert.strictEqual(optional.status, 0, optional.stderr)
      assert.include(optional.stdout, "not copied (ENOENT)")
      assert.deepStrictEqual(readdirSync(dest), ["tls.crt"])
      // An operator's pair (hostPath) must be there.
      const required = run("required")
      assert.strictEqual(required.status, 1)
      assert.match(required.stderr, /^prepare-state: kubelet pair: cannot read .*vk-kubelet\.key: ENOENT/)
    }))

  it("the token and the pair in one run, as the chart's default renders it", () =>
    inTempRoot((root) => {
      const state = join(root, "state")
      mkdirSync(state)
      const token = join(root, "sandboxd-token")
      writeFileSync(token, "root-token\n", { mode: 0o600 })
      const volume = join(root, "volume")
      mkdirSync(volume)
      chmodSync(volume, 0o777)
      const run = runPrepare([
        "--state", state,
        "--copy", token, join(volume, "token"),
        "--pair", "optional", join(root, "none.crt"), join(root, "none.key"), volume
      ])
      assert.strictEqual(run.status, 0, run.stderr)
      assert.strictEqual(readAsDaemon(join(volume, "token")).stdout, "root-token\n")
      assert.include(run.stdout, "kubelet pair (optional)")
      assert.deepStrictEqual(readdirSync(volume), ["token"], "no vk-cocoon here: nothing else copied")
    }))
})
