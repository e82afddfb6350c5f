/**
 * The Docker CLI for the container tests: a command that must succeed, containers that are
 * removed with the test's scope, and what a test reads of a container (exit code, logs, diff,
 * the host pid of its PID 1). Every container runs on the host network: the engine here has no
 * bridge (.ci/docker.sh).
 */
import { randomBytes } from "node:crypto"
import { Effect, Schema, type Scope } from "effect"
import { type Finished, runProcess } from "../support/Process.ts"

export class DockerFailed extends Schema.TaggedError<DockerFailed>()("DockerFailed", {
  command: Schema.String,
  code: Schema.NullOr(Schema.Number),
  output: Schema.String
}) {}

/** The image under test: `npm run test:image` (test/image/run.sh) builds it or takes `VK_IMAGE`. */
export const image = process.env["VK_IMAGE"] ?? ""

const dockerEnv = (): Record<string, string> => {
  const env: Record<string, string> = {}
  for (const name of ["DOCKER_HOST", "HOME"]) {
    const value = process.env[name]
    if (value !== undefined) env[name] = value
  }
  return env
}

/** `docker <args>`, whatever its exit code. */
export const dockerAny = (args: ReadonlyArray<string>): Effect.Effect<Finished> => runProcess("docker", args, dockerEnv())

/** `docker <args>`, which must exit 0. */
export const docker = (args: ReadonlyArray<string>): Effect.Effect<Finished, DockerFailed> =>
  Effect.flatMap(dockerAny(args), (finished) =>
    finished.code === 0
      ? Effect.succeed(finished)
      : Effect.fail(new DockerFailed({ command: `docker ${args.join(" ")}`.slice(0, 2000), code: finished.code, output: finished.output.slice(-4000) })))

/** A name no other test run uses. */
export const containerName = (what: string): string => `vk-image-test-${what}-${randomBytes(4).toString("hex")}`

export interface Container {
  readonly name: string
  /** The exit code once it has ended (`docker wait`). */
  readonly wait: Effect.Effect<number, DockerFailed>
  /** stdout and stderr so far. */
  readonly logs: Effect.Effect<string, DockerFailed>
  /** The host's pid of the container's PID 1 (0 once it has ended). */
  readonly hostPid: Effect.Effect<number, DockerFailed>
}

const handle = (name: string): Container => ({
  name,
  wait: Effect.map(docker(["wait", name]), (f) => Number(f.stdout.trim())),
  logs: Effect.map(docker(["logs", name]), (f) => f.output),
  hostPid: Effect.map(docker(["inspect", "-f", "{{.State.Pid}}", name]), (f) => Number(f.stdout.trim()))
})

/**
 * `docker run -d --network host <runArgs> <image> <args>`; removed (killed if still running) when
 * the scope closes.
 */
export const runContainer = (
  what: string,
  runArgs: ReadonlyArray<string>,
  args: ReadonlyArray<string>
): Effect.Effect<Container, DockerFailed, Scope.Scope> => {
  const name = containerName(what)
  return Effect.acquireRelease(
    Effect.as(docker(["run", "-d", "--name", name, "--network", "host", ...runArgs, image, ...args]), handle(name)),
    () => Effect.ignore(dockerAny(["rm", "-f", name]))
  )
}

/** Runs the image to its end (`docker run --rm`, in the foreground) and returns what it printed. */
export const runToEnd = (runArgs: ReadonlyArray<string>, args: ReadonlyArray<string>): Effect.Effect<Finished> =>
  dockerAny(["run", "--rm", "--network", "host", ...runArgs, image, ...args])
