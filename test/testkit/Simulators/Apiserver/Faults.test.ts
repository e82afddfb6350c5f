import { assert, describe, it } from "@effect/vitest"
import { DenyList, noFaults } from "../../../../testkit/Simulators/Apiserver/Faults.ts"
import { Leases, Nodes, Pods } from "../../../../testkit/Simulators/Apiserver/Resources.ts"

describe("fault hooks", () => {
  it("no faults by default", () => {
    assert.deepStrictEqual(noFaults(), { latencyMs: 0, failures: [], stallWatches: false })
  })

  it("a deny rule matches verb, resource with subresource, group and namespace; the 403 names the user", () => {
    const deny = new DenyList("system:serviceaccount:x:y")
    deny.add({ verb: "update", resource: "pods/status", namespace: "team" })
    deny.add({ verb: "get", resource: "leases", group: "other.group" })
    const refused = deny.authorize("update", Pods, "status", "team", "p")
    assert.strictEqual(refused?.code, 403)
    assert.match(refused?.message ?? "", /User "system:serviceaccount:x:y" cannot update resource "pods\/status"/)
    assert.isUndefined(deny.authorize("update", Pods, undefined, "team", "p"))
    assert.isUndefined(deny.authorize("update", Pods, "status", "default", "p"))
    assert.isUndefined(deny.authorize("get", Leases, undefined, "team", "l"))
    deny.clear()
    assert.isUndefined(deny.authorize("update", Pods, "status", "team", "p"))
  })

  it("a namespace in the rule never matches a cluster-scoped resource", () => {
    const deny = new DenyList("u")
    deny.add({ verb: "get", resource: "nodes", namespace: "team" })
    assert.isUndefined(deny.authorize("get", Nodes, undefined, "team", "n"))
    deny.add({ verb: "get", resource: "nodes" })
    assert.strictEqual(deny.authorize("get", Nodes, undefined, "team", "n")?.code, 403)
  })
})
