// prepare-state: makes what the daemon needs from the host usable by the daemon's user. Runs as
//   node -e <this file> -- --owner <uid>:<gid> [--state <dir>]... [--copy <src> <dest>]...
//     [--pair <optional|required> <cert> <key> <dest dir>]
// in the init container: uid 0 with CAP_CHOWN as its only capability (the image has no shell).
// Without CAP_DAC_OVERRIDE or CAP_FOWNER it reaches only what root owns, which is enough: a
// root-owned 0600 file is readable by its owner.
// --state hands the hostPath state directory and everything in it to uid:gid (the kubelet's new
//   0755 directory, or an older root-run daemon's 0700 directory and 0600 files): the mode of the
//   top directory is set while root still owns it, and every entry is re-owned before its parent
//   directory. Symbolic links are re-owned themselves, never followed. Idempotent: entries owned by
//   uid:gid are left alone.
// --copy copies a host file the daemon's user cannot read (each host's sandboxd token, DEP-2) into
//   a memory volume as uid:gid, mode 0400; a file that cannot be read is an error.
// --pair copies a kubelet serving pair (TLS-4) to <dest dir>/tls.crt and tls.key the same way.
//   "optional" (vk-cocoon's pair, which the daemon judges and can do without): a half missing or
//   unreadable is reported and not copied, and an older copy of it removed, so the daemon finds it
//   absent and self-signs. "required" (the operator's pair): that is an error.
// Host files are only read. A copy is written beside its final name and renamed over it (an older
// copy, 0400 and the daemon's, cannot be opened for writing here; the volume's directory can be
// written). Exit 1 with one line on failure; file contents are never printed.
"use strict"
const fs = require("node:fs")
const path = require("node:path")
const fail = (message) => {
  process.stderr.write(`prepare-state: ${message}\n`)
  process.exit(1)
}
const usage =
  "usage: prepare-state --owner <uid>:<gid> [--state <absolute dir>]... [--copy <absolute src> <absolute dest>]... " +
  "[--pair <optional|required> <cert> <key> <dest dir>]"
const MAX_COPY_BYTES = 1024 * 1024

let owner
let pair
const states = []
const copies = []
const args = process.argv.slice(1)
const absolute = (...values) => values.every((value) => typeof value === "string" && path.isAbsolute(value))
for (let i = 0; i < args.length; i++) {
  const arg = args[i]
  if (arg === "--owner" && /^[0-9]+:[0-9]+$/.test(args[i + 1] ?? "")) owner = args[++i].split(":").map(Number)
  else if (arg === "--state" && absolute(args[i + 1])) states.push(args[++i])
  else if (arg === "--copy" && absolute(args[i + 1], args[i + 2])) copies.push([args[++i], args[++i]])
  else if (arg === "--pair" && ["optional", "required"].includes(args[i + 1]) && absolute(args[i + 2], args[i + 3], args[i + 4])) {
    pair = { mode: args[i + 1], cert: args[i + 2], key: args[i + 3], dest: args[i + 4] }
    i += 4
  } else fail(usage)
}
if (owner === undefined || owner[0] <= 0 || (states.length + copies.length === 0 && pair === undefined)) fail(usage)
const [uid, gid] = owner
const describe = (cause, at) => `${cause && cause.code ? cause.code : "error"} (${cause && cause.path ? cause.path : at})`

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
for (const dir of states) {
  changed = 0
  try {
    const top = fs.lstatSync(dir)
    if (!top.isDirectory()) fail(`${dir} is not a directory`)
    // Only the owner may change the mode: do it while root still owns the directory.
    if (top.uid === 0 && (top.mode & 0o777) !== 0o700) fs.chmodSync(dir, 0o700)
    walk(dir)
  } catch (cause) {
    fail(`${dir}: ${describe(cause, dir)}`)
  }
  process.stdout.write(`prepare-state: ${dir} owned by ${uid}:${gid} (${changed} entries changed)\n`)
}

/** Reads `from` (a regular file); the bytes, or the error code when it cannot be read. */
const read = (from) => {
  try {
    const stat = fs.statSync(from)
    if (!stat.isFile()) return { code: "not a regular file" }
    if (stat.size > MAX_COPY_BYTES) return { code: `larger than ${MAX_COPY_BYTES} bytes` }
    return { bytes: fs.readFileSync(from) }
  } catch (cause) {
    return { code: cause && cause.code ? cause.code : "error" }
  }
}
/** Writes `bytes` to `dest` as uid:gid, mode 0400: beside it first, then renamed over it. */
const write = (bytes, dest) => {
  const temporary = path.join(path.dirname(dest), `.${path.basename(dest)}.prepare-state`)
  fs.rmSync(temporary, { force: true })
  const fd = fs.openSync(temporary, "wx", 0o400)
  try {
    fs.writeFileSync(fd, bytes)
    fs.fchmodSync(fd, 0o400)
    fs.fchownSync(fd, uid, gid)
    fs.fsyncSync(fd)
  } finally {
    fs.closeSync(fd)
  }
  fs.renameSync(temporary, dest)
}

for (const [src, dest] of copies) {
  const source = read(src)
  if (source.bytes === undefined) fail(`copy ${src}: cannot read it: ${source.code}`)
  try {
    write(source.bytes, dest)
  } catch (cause) {
    fail(`copy ${src} to ${dest}: ${describe(cause, dest)}`)
  }
  process.stdout.write(`prepare-state: copied ${src} to ${dest} (${source.bytes.length} bytes, owned by ${uid}:${gid}, mode 0400)\n`)
}

if (pair !== undefined) {
  const half = (from, name) => {
    const source = read(from)
    const dest = path.join(pair.dest, name)
    if (source.bytes === undefined) {
      if (pair.mode === "required") fail(`kubelet pair: cannot read ${from}: ${source.code}`)
      fs.rmSync(dest, { force: true })
      return `${from} not copied (${source.code})`
    }
    write(source.bytes, dest)
    return `${from} copied`
  }
  try {
    const done = [half(pair.cert, "tls.crt"), half(pair.key, "tls.key")]
    process.stdout.write(`prepare-state: kubelet pair (${pair.mode}) to ${pair.dest}: ${done.join(", ")}\n`)
  } catch (cause) {
    fail(`kubelet pair to ${pair.dest}: ${describe(cause, pair.dest)}`)
  }
}
