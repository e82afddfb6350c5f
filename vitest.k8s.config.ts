import { defineConfig } from "vitest/config"

// The real-apiserver suite (`npm run test:k8s`, test/k8s/run.sh), in two projects that run one
// after the other, each with one control plane started by its global setup; test files run one
// at a time since they share it.
// - apiserver: kube-apiserver and etcd alone; the tests play scheduler and controllers themselves.
// - cluster (test/k8s/cluster): the real kube-scheduler and kube-controller-manager around them.
export default defineConfig({
  test: {
    fileParallelism: false,
    testTimeout: 60_000,
    hookTimeout: 180_000,
    projects: [
      {
        extends: true,
        test: {
          name: "apiserver",
          include: ["test/k8s/**/*.test.ts"],
          exclude: ["test/k8s/cluster/**"],
          globalSetup: ["test/k8s/fixture/globalSetup.ts"],
          sequence: { groupOrder: 0 }
        }
      },
      {
        extends: true,
        test: {
          name: "cluster",
          include: ["test/k8s/cluster/**/*.test.ts"],
          globalSetup: ["test/k8s/cluster/globalSetup.ts"],
          testTimeout: 180_000,
          sequence: { groupOrder: 1 }
        }
      }
    ]
  }
})
