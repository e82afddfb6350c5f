import { defineConfig } from "vitest/config"

/** Tests over manifests rendered by test/helm/run.sh (VK_HELM_RENDER_DIR). */
export default defineConfig({
  test: { include: ["test/helm/**/*.test.ts"], testTimeout: 30_000 }
})
