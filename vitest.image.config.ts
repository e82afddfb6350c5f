import { defineConfig } from "vitest/config"

// The container tests (`npm run test:image`, test/image/run.sh): the built image run with
// `docker run` the way the chart runs it, against the simulators in the test process. One file at
// a time: they share the machine's one Docker engine.
export default defineConfig({
  test: {
    name: "image",
    include: ["test/image/**/*.test.ts"],
    fileParallelism: false,
    testTimeout: 180_000,
    hookTimeout: 180_000
  }
})
