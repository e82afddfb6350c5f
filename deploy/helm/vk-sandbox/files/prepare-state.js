// prepare-state: hands the hostPath state directory and everything in it to the daemon's user and,
// when asked, copies a kubelet serving pair that user cannot read (vk-cocoon's root-only key).
// Runs as `node -e <this file> <dir> <uid> <gid> [<optional|required> <cert> <key> <dest dir>]` in
// the init container: uid 0 with CAP_CHOWN as its only capability. Without CAP_DAC_OVERRIDE or
// CAP_FOWNER it reaches only what root owns (the kubelet's new 0755 directory, or an older root-run
// daemon's 0700 directory and 0600 files), so the mode of the top directory is set while root
// still owns it, and every entry is re-owned before its parent directory. Symbolic links are
// re-owned themselves, never followed. Idempotent: entries already owned by uid:gid are left alone.
// The pair (TLS-4) is read, never changed, and written to <dest dir>/tls.crt and tls.key (a memory
// volume) as uid:gid, mode 0400. "optional" (vk-cocoon's pair, which the daemon judges and can do
// without): a half missing or unreadable is reported and not copied, and an older copy of it
// removed, so the daemon finds it absent and self-signs. "required" (the operator's pair): that is
// an error. Exit 1 with one line on failure.
"use strict"
const fs = require("node:fs")
const path = require("node:path")
const [dir, uidText, gidText, pairMode, ...pairPaths] = process.argv.slice(1)
const uid = Number(uidText)
const gid = Number(gidText)
const fail = (message) => {
  process.stderr.write(`prepare-state: ${message}\n`)
  process.exit(1)
}
const usage = "usage: prepare-state <absolute dir> <uid > 0> <gid> [<optional|required> <cert> <key> <dest dir>]"
if (!dir || !path.isAbsolute(dir) || !Number.isInteger(uid) || !Number.isInteger(gid) || uid <= 0 || gid < 0) fail(usage)
if (pairMode !== undefined && (!["optional", "required"].includes(pairMode) || pairPaths.length !== 3)) fail(usage)
let changed = 0
const own = (entry, stat) => {
  if (stat.uid === uid && stat.gid === gid) return
  fs.lchownSync(entry, uid, gid)
  changed++
}
const walk = (entry) => {
  const stat = fs.lstatSync(entry)
  if (stat.isDirectory() && stat.uid !== uid) {
    for (const name of fs.readdirSync(entry)) walk(path.join(entry, name))
  }
  own(entry, stat)
}
try {
  const top = fs.lstatSync(dir)
  if (!top.isDirectory()) fail(`${dir} is not a directory`)
  // Only the owner may change the mode: do it while root still owns the directory.
  if (top.uid === 0 && (top.mode & 0o777) !== 0o700) fs.chmodSync(dir, 0o700)
  walk(dir)
} catch (cause) {
  fail(`${dir}: ${cause && cause.code ? cause.code : "error"} (${cause && cause.path ? cause.path : dir})`)
}
process.stdout.write(`prepare-state: ${dir} owned by ${uid}:${gid} (${changed} entries changed)\n`)

// The copy is written beside its final name and renamed over it: an older copy (0400, the
// daemon's) cannot be opened for writing here, but the memory volume's directory is writable.
const copyHalf = (from, dest, name) => {
  let bytes
  try {
    bytes = fs.readFileSync(from)
  } catch (cause) {
    const code = cause && cause.code ? cause.code : "error"
    if (pairMode === "required") fail(`kubelet pair: cannot read ${from}: ${code}`)
    fs.rmSync(path.join(dest, name), { force: true })
    return `${from} not copied (${code})`
  }
  const temporary = path.join(dest, `.${name}.tmp`)
  fs.rmSync(temporary, { force: true })
  const fd = fs.openSync(temporary, "wx", 0o400)
  try {
    fs.writeFileSync(fd, bytes)
    fs.fchownSync(fd, uid, gid)
  } finally {
    fs.closeSync(fd)
  }
  fs.renameSync(temporary, path.join(dest, name))
  return `${from} copied`
}
if (pairMode !== undefined) {
  const [cert, key, dest] = pairPaths
  try {
    const done = [copyHalf(cert, dest, "tls.crt"), copyHalf(key, dest, "tls.key")]
    process.stdout.write(`prepare-state: kubelet pair (${pairMode}) to ${dest}: ${done.join(", ")}\n`)
  } catch (cause) {
    fail(`kubelet pair to ${dest}: ${cause && cause.code ? cause.code : "error"} (${cause && cause.path ? cause.path : dest})`)
  }
}
