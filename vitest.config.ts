import { defineConfig } from "vitest/config"

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    exclude: ["test/k8s/**", "test/helm/**", "test/crash/**", "test/image/**", "node_modules/**"],
    testTimeout: 30_000,
    hookTimeout: 30_000
  }
})
