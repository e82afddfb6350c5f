import type { ClaimRecord } from "../Schemas/Claims.ts"
import { compareKeys, encodeClaimMember, encodeClaimsFile, trailerOf } from "../Schemas/ClaimsFile/Encode.ts"
import type { PodKey } from "../Schemas/Ids.ts"

/**
 * Encodes the table to the file's bytes, reusing the UTF-8 JSON of every row whose record object
 * is unchanged since the previous call (re-encoding 2000 rows costs about as much as the durable
 * write itself). Only the rows passed in are ever written: a member is reused only when the cached
 * entry is for the same key AND the same record object, and after each call the cache holds
 * exactly the rows of that call, so a removed or excluded (tentative) row can never come back
 * from it. The key order is kept sorted incrementally.
 *
 * The previous output is the only copy of the unchanged rows' bytes: runs of unchanged members
 * that were adjacent in it are copied from it as one block each, and only new or changed members
 * are written from their JSON text, which is dropped once placed. A commit that removes one row
 * and adds one costs a few block copies instead of one small copy per row (the per-row copies
 * touch memory scattered over the heap, which is cold after the write's I/O waits). Between
 * calls the encoder holds one buffer of exactly the file's size and no per-row bytes: a Buffer
 * per row would cost its own object and keep alive the shared allocation pool slab it was cut
 * from, several times the row's size per Pod once other short-lived Buffers have come and gone.
 * Each call writes a fresh buffer, so the bytes it returns stay valid for as long as the caller
 * holds them.
 *
 * `seed` starts the encoder from a file the writer wrote (the claims file as loaded), as if that
 * file had been its last output: the startup write of 10,000 unchanged rows is then one block
 * copy of the loaded bytes instead of 10,000 encodings, and only rows changed since the load
 * (a back-filled claimedAt, a lifted row's deadline) are encoded.
 */
export interface ClaimsEncoder {
  /**
   * `otherMembers`: the top-level members that follow `claims` (`"name":value,…`, already
   * encoded), or "" for the reference's file.
   */
  (rows: ReadonlyMap<PodKey, ClaimRecord>, otherMembers?: string): Uint8Array
  /**
   * Takes `file` as the last output: `rows` (in key order) are its members, row i at bytes
   * `[starts[i], ends[i])`, which must be exactly `encodeClaimMember(key, record)` (what
   * `readWrittenText` checks). Spans that do not lie as the writer lays them out (`{"claims":{`,
   * then the members one comma apart) are not taken, and the encoder starts empty. The encoder
   * keeps `file` as the source of the unchanged rows' bytes until the next call.
   */
  readonly seed: (file: Buffer<ArrayBuffer>, rows: ReadonlyMap<PodKey, ClaimRecord>, starts: ReadonlyArray<number>, ends: ReadonlyArray<number>) => void
  /**
   * What the encoder holds between calls: the bytes of its last output, and how many rows still
   * hold their own JSON text (none once a call returned).
   */
  readonly held: () => { readonly outputBytes: number; readonly rowTexts: number }
}

/** A row as the encoder holds it between calls. */
interface Member {
  readonly key: PodKey
  record: ClaimRecord
  /**
   * Its JSON while it waits to be placed (offset -1: new or re-encoded, when it is always set);
   * undefined once its bytes are in the last output (placed, or seeded from a loaded file).
   */
  text: string | undefined
  /** Its encoding's length in bytes, kept here so that an unchanged row costs no look at its bytes. */
  length: number
  /** The call that last saw this key among the rows. */
  seen: number
  /** Where its bytes start in the last output; -1 when not there (new, or re-encoded). */
  offset: number
  /** Its position in the rows' iteration order of the last call. */
  order: number
}

const comma = 0x2c

/**
 * Pass 2 of a call: the previous order (`sorted`) minus the members call `current` did not see
 * (dropped from `cache`), merged with the new members (`added`, sorted by key), laid out in
 * `target` from `start`: runs of members adjacent in `previous` are copied as one block each, the
 * rest written from their text. Returns where the bytes end, the members in their new order, and
 * whether a member's bytes fell short (the caller then starts over).
 */
const layOut = (
  target: Buffer,
  previous: Buffer,
  start: number,
  sorted: ReadonlyArray<Member>,
  added: ReadonlyArray<Member>,
  current: number,
  cache: Map<PodKey, Member>
): { readonly offset: number; readonly out: Array<Member>; readonly short: boolean } => {
  let offset = start
  // The pending block of the previous output: [runFrom, runTo) goes to `runDest`.
  let runFrom = -1
  let runTo = -1
  let runDest = -1
  const flush = () => {
    if (runFrom >= 0) {
      previous.copy(target, runDest, runFrom, runTo)
      offset = runDest + (runTo - runFrom)
      runFrom = -1
    }
  }
  const out: Array<Member> = []
  let short = false
  const place = (member: Member) => {
    const length = member.length
    if (runFrom >= 0 && member.offset === runTo + 1) {
      // Adjacent to the block in the previous output (after its comma): the block grows.
      member.offset = runDest + (member.offset - runFrom)
      runTo += 1 + length
    } else {
      flush()
      if (out.length > 0) target[offset++] = comma
      if (member.offset >= 0) {
        runFrom = member.offset
        runTo = member.offset + length
        runDest = offset
        member.offset = offset
      } else {
        // offset -1: new or re-encoded, so its text is set; were it missing, the bytes would
        // fall short and the caller starts over.
        const written = target.write(member.text ?? "", offset)
        if (written !== length) short = true
        member.text = undefined
        member.offset = offset
        offset += written
      }
    }
    out.push(member)
  }
  // Pass 2: the previous order minus the members not among the rows, merged with the new keys
  // (each new key's place found by binary search, not by comparing it with every key before it).
  const insertAt = added.map((member) => {
    let lo = 0
    let hi = sorted.length
    while (lo < hi) {
      const mid = (lo + hi) >>> 1
      if (compareKeys(sorted[mid]!.key, member.key) < 0) lo = mid + 1
      else hi = mid
    }
    return lo
  })
  let a = 0
  for (let i = 0; i < sorted.length; i++) {
    const member = sorted[i]!
    while (a < added.length && insertAt[a]! <= i) place(added[a++]!)
    if (member.seen !== current) {
      cache.delete(member.key)
      continue
    }
    place(member)
  }
  while (a < added.length) place(added[a++]!)
  flush()
  return { offset, out, short }
}

export const makeClaimsEncoder = (): ClaimsEncoder => {
  const cache = new Map<PodKey, Member>()
  /** Every cached member, sorted by key: the order of the last output. */
  let sorted: Array<Member> = []
  /** Every cached member in the rows' iteration order of the last call. */
  let iterated: Array<Member> = []
  let call = 0
  /** The last output: the source of the unchanged rows' bytes in the next call. */
  let last = Buffer.alloc(0)
  const open = Buffer.from(`{"claims":{`)
  /** `}` + the top-level members after `claims` + `}`, remade only when those members change. */
  let closeFor = ""
  let close = Buffer.from(`}}`)

  const startOver = (rows: ReadonlyMap<PodKey, ClaimRecord>, otherMembers: string): Uint8Array => {
    // Cannot happen (every cached member is in `sorted`); start over rather than write wrong bytes.
    cache.clear()
    sorted = []
    iterated = []
    last = Buffer.alloc(0)
    return Buffer.from(encodeClaimsFile(rows, otherMembers))
  }

  const seed: ClaimsEncoder["seed"] = (file, rows, starts, ends) => {
    cache.clear()
    sorted = []
    iterated = []
    last = Buffer.alloc(0)
    if (starts.length !== rows.size || ends.length !== rows.size) return
    if (file.length < open.length || Buffer.compare(file.subarray(0, open.length), open) !== 0) return
    const members: Array<Member> = []
    let expected = open.length
    let previousKey: PodKey | undefined
    let laidOut = true
    // forEach, not for…of: no entry array per row (a restart seeds 10,000 of them).
    rows.forEach((record, key) => {
      if (!laidOut) return
      const i = members.length
      const start = starts[i]!
      const end = ends[i]!
      // Adjacent members, one comma apart, in key order: the layout every output has.
      if (
        start !== expected || end <= start || end > file.length || (i > 0 && file[start - 1] !== comma) ||
        (previousKey !== undefined && compareKeys(previousKey, key) >= 0)
      ) {
        laidOut = false
        return
      }
      previousKey = key
      expected = end + 1
      const member: Member = { key, record, text: undefined, length: end - start, seen: call, offset: start, order: i }
      members.push(member)
      cache.set(key, member)
    })
    if (!laidOut || members.length !== rows.size) {
      cache.clear()
      return
    }
    sorted = members
    iterated = members.slice()
    // The next call copies the unchanged rows from `file`.
    last = file
  }

  const encode = (rows: ReadonlyMap<PodKey, ClaimRecord>, otherMembers = ""): Uint8Array => {
    if (otherMembers !== closeFor) {
      closeFor = otherMembers
      close = Buffer.from(`}${trailerOf(otherMembers)}}`)
    }
    const current = ++call
    const added: Array<Member> = []
    let bodyBytes = 0
    let count = 0
    // Pass 1: a member for every row, reused only for the very same record object. A table's
    // iteration order barely changes between writes, so the member of the last call's next
    // position is tried before the cache lookup (which hashes the key: a few cache misses per row
    // when memory is cold after the write's I/O waits).
    const previousOrder = iterated
    const order: Array<Member> = []
    let next = 0
    rows.forEach((record, key) => {
      const guess = previousOrder[next]
      let member: Member | undefined
      if (guess !== undefined && guess.key === key) {
        member = guess
        next++
      } else {
        member = cache.get(key)
        if (member !== undefined) next = member.order + 1
      }
      if (member === undefined) {
        const text = encodeClaimMember(key, record)
        member = { key, record, text, length: Buffer.byteLength(text), seen: current, offset: -1, order: 0 }
        cache.set(key, member)
        added.push(member)
      } else {
        if (member.record !== record) {
          member.record = record
          member.text = encodeClaimMember(key, record)
          member.length = Buffer.byteLength(member.text)
          member.offset = -1
        }
        member.seen = current
      }
      member.order = order.length
      order.push(member)
      bodyBytes += member.length
      count++
    })
    iterated = order
    if (added.length > 1) added.sort((a, b) => compareKeys(a.key, b.key))

    const byteLength = open.length + bodyBytes + Math.max(0, count - 1) + close.length
    // Not from the shared pool (a pool slab could be held by the output for as long as it lives).
    const target = Buffer.allocUnsafeSlow(byteLength)
    const previous = last
    target.set(open, 0)
    const { offset, out, short } = layOut(target, previous, open.length, sorted, added, current, cache)
    if (short || out.length !== count || cache.size !== count || offset + close.length !== byteLength) return startOver(rows, otherMembers)
    target.set(close, offset)
    sorted = out
    last = target
    return target
  }
  const held: ClaimsEncoder["held"] = () => {
    let rowTexts = 0
    cache.forEach((member) => {
      if (member.text !== undefined) rowTexts++
    })
    return { outputBytes: last.length, rowTexts }
  }
  return Object.assign(encode, { seed, held })
}
