/** Temporary directories for a test's scope. */
import { Effect } from "effect"
import * as NodeFs from "node:fs/promises"
import * as NodeOs from "node:os"
import * as NodePath from "node:path"

/** A fresh directory under the system's temp folder, removed with everything in it when the scope closes. */
export const tempDir = (prefix: string) =>
  Effect.acquireRelease(
    Effect.promise(() => NodeFs.mkdtemp(NodePath.join(NodeOs.tmpdir(), prefix))),
    (dir) => Effect.promise(() => NodeFs.rm(dir, { recursive: true, force: true }))
  )
