/**
 * `npm run build`: the production build the container image runs. One bundled ES module with the
 * daemon's code and the parts of its dependencies it uses (tree-shaken): no `effect` barrel and
 * no test tooling (testkit/ is reached only through a computed path, which the bundler leaves
 * alone). Every apiserver object is decoded with Schema (src/Schemas), so nothing the daemon runs
 * uses client-node's generated API classes, model classes or model serializer.
 *
 * Those modules still come in through client-node's package root (the kubeconfig code imports its
 * generated index), and each model module ends in assignments to its own class's static fields
 * (`V1Node.attributeTypeMap = [...]`), which a bundler must assume to be side effects. In
 * client-node's dist/ such assignments to a module's own classes are the only top-level
 * statements besides declarations, except polyfill.js (a global `File`); declaring the other
 * modules free of side effects lets the unused ones go (test/Packaging/Bundle.test.ts checks).
 *
 * The bundle sits two directories below the package root, as src/Cli/*.ts does, so the paths it
 * resolves from its own location (package.json for --version, testkit/ for `sim`) stay the same.
 * dist/main.js is a one-line entry that imports it (the image runs `node dist/main.js`).
 *
 * V8 keeps a module's source text for as long as the process runs (functions are compiled
 * lazily from it), so the bundle's text is resident memory: comments are dropped (the
 * dependencies' JSDoc was about a third of it) and non-ASCII characters escaped (a single `—`
 * in a comment made V8 hold the whole text at two bytes per character). Together about 16 MB
 * of the idle daemon's RSS (test/Packaging/Bundle.test.ts).
 */
export default {
  input: { "app/vk-sandbox": "src/main.ts" },
  platform: "node",
  treeshake: {
    // false: no side effects; undefined: as the package says (effect's package.json declares none)
    moduleSideEffects: (id) => (/[\\/]@kubernetes[\\/]client-node[\\/]dist[\\/](?!polyfill\.js$)/.test(id) ? false : undefined)
  },
  output: {
    dir: "dist",
    format: "esm",
    sourcemap: false,
    codeSplitting: false,
    comments: false,
    charset: "ascii"
  },
  plugins: [{
    name: "entry",
    generateBundle() {
      this.emitFile({ type: "asset", fileName: "main.js", source: "import \"./app/vk-sandbox.js\"\n" })
    }
  }]
}
