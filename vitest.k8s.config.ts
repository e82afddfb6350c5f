import { defineConfig } from "vitest/config"

// The real-apiserver suite (`npm run test:k8s`, test/k8s/run.sh): one control plane for the run,
// started by the global setup; test files run one at a time since they share it.
export default defineConfig({
  test: {
    include: ["test/k8s/**/*.test.ts"],
    globalSetup: ["test/k8s/fixture/globalSetup.ts"],
    fileParallelism: false,
    testTimeout: 60_000,
    hookTimeout: 180_000
  }
})
