import { defineConfig } from "vitest/config"

// The crash suite (`npm run test:crash`): real daemon processes, killed and restarted; one file,
// its blocks in order (the last test prints the figures).
export default defineConfig({
  test: {
    include: ["test/crash/**/*.test.ts"],
    fileParallelism: false,
    // The failpoint scenarios run this many at once; the random-kill bursts one after another.
    maxConcurrency: 3,
    testTimeout: 600_000,
    hookTimeout: 60_000
  }
})
