import { defineConfig } from "vitest/config"

// The chaos run (`npm run test:chaos`, test/chaos/run.sh): one file, its tests in order (the first
// runs the whole nemesis run and the checker; each property is then a test of its own).
export default defineConfig({
  test: {
    include: ["test/chaos/Chaos.run.ts"],
    fileParallelism: false,
    testTimeout: 3_600_000,
    hookTimeout: 120_000
  }
})
