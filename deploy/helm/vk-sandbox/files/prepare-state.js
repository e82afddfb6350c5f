// prepare-state: hands the hostPath state directory and everything in it to the daemon's user.
// Runs as `node -e <this file> <dir> <uid> <gid>` in the init container: uid 0 with CAP_CHOWN as
// its only capability. Without CAP_DAC_OVERRIDE or CAP_FOWNER it reaches only what root owns
// (the kubelet's new 0755 directory, or an older root-run daemon's 0700 directory and 0600
// files), so the mode of the top directory is set while root still owns it, and every entry is
// re-owned before its parent directory. Symbolic links are re-owned themselves, never followed.
// Idempotent: entries already owned by uid:gid are left alone. Exit 1 with one line on failure.
"use strict"
const fs = require("node:fs")
const path = require("node:path")
const [dir, uidText, gidText] = process.argv.slice(1)
const uid = Number(uidText)
const gid = Number(gidText)
const fail = (message) => {
  process.stderr.write(`prepare-state: ${message}\n`)
  process.exit(1)
}
if (!dir || !path.isAbsolute(dir) || !Number.isInteger(uid) || !Number.isInteger(gid) || uid <= 0 || gid < 0) {
  fail("usage: prepare-state <absolute dir> <uid > 0> <gid>")
}
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
