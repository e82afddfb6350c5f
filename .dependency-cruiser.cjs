/**
 * Import rules: which folder may import which. `npm test` runs this (test/Architecture/Imports.test.ts)
 * so a wrong-way import fails CI. One rule per arrow; docs/architecture.md explains the layout.
 *
 *   Schemas <- Services <- Layers, Programs <- composition root (main.ts, Daemon.ts, Cli/)
 *   Store/, Kube/, Sandboxd/: building blocks of one layer family (the claims file, the Kubernetes
 *   client, the sandboxd client),
 *   between Services and Layers.
 *   testkit/ (simulators, demo, simulator-backed layers) may import the product; never the reverse.
 */
/** @type {import("dependency-cruiser").IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: "schemas-import-nothing-of-ours",
      comment: "Schemas are plain data shapes: they may import other Schemas and libraries, nothing else of ours.",
      severity: "error",
      from: { path: "^src/Schemas/" },
      to: { path: "^(src|testkit)/", pathNot: "^src/Schemas/" }
    },
    {
      name: "services-import-only-schemas",
      comment: "Services are interfaces, their errors and their tags: they may import Schemas and other Services only (never Programs, Layers, Cli).",
      severity: "error",
      from: { path: "^src/Services/" },
      to: { path: "^(src|testkit)/", pathNot: "^src/(Schemas|Services)/" }
    },
    {
      name: "building-blocks-import-only-schemas-and-services",
      comment: "Store/, Kube/ and Sandboxd/ are parts that layers are made of: they may import Schemas, Services and their own folder, nothing above.",
      severity: "error",
      from: { path: "^src/(Store|Kube|Sandboxd)/" },
      to: { path: "^(src|testkit)/", pathNot: ["^src/(Schemas|Services)/", "^src/$1/"] }
    },
    {
      name: "layers-do-not-import-programs",
      comment: "A Layer implements a Service; behaviour that uses Services lives in Programs, which Layers must not import (a layer built from Programs lives beside them: docs/architecture.md, Where a layer lives).",
      severity: "error",
      from: { path: "^src/Layers/" },
      to: { path: "^src/Programs/" }
    },
    {
      name: "programs-do-not-import-layers",
      comment: "Programs use Services through their tags; which implementation runs is the composition root's choice.",
      severity: "error",
      from: { path: "^src/Programs/" },
      to: { path: "^src/(Layers|Store|Kube|Sandboxd)/" }
    },
    {
      name: "programs-and-layers-do-not-import-cli",
      comment: "The command line (Cli/) is the outermost ring: it parses flags into Schemas.Config and starts the daemon; nothing inside imports it.",
      severity: "error",
      from: { path: "^src/(Programs|Layers|Services|Schemas|Store|Kube|Sandboxd)/" },
      to: { path: "^src/(Cli/|main\\.ts|Daemon\\.ts)" }
    },
    {
      name: "layer-into-another-layers-internals",
      comment: "src/Layers/X.ts is a layer (src/Layers/X/ would hold its private parts): it never imports another layer or its parts; layers meet through Services, and share parts only from Store/, Kube/ or Sandboxd/.",
      severity: "error",
      from: { path: "^src/Layers/([^/.]+)" },
      to: { path: "^src/Layers/", pathNot: ["^src/Layers/$1/", "^src/Layers/$1\\.ts$"] }
    },
    {
      name: "product-does-not-import-testkit",
      comment: "testkit/ (simulators, demo, simulator-backed layers) is not built into dist/ nor shipped in the image; `sim` loads it by a computed path.",
      severity: "error",
      from: { path: "^src/" },
      to: { path: "^testkit/" }
    },
    {
      name: "no-circular",
      comment: "An import cycle makes module load order matter; none exist today, keep it so.",
      severity: "error",
      from: { path: "^(src|testkit)/" },
      to: { circular: true }
    }
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    exclude: { path: "node_modules" },
    parser: "swc",
    enhancedResolveOptions: { extensions: [".ts", ".js"] }
  }
}
