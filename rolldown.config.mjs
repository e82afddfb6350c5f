/**
 * `npm run build`: the production build the container image runs. One bundled ES module with the
 * daemon's code and the parts of its dependencies it uses (tree-shaken): no `effect` barrel and
 * no test tooling (testkit/ is reached only through a computed path, which the bundler leaves
 * alone). Pods are decoded without client-node's object model (Schemas/Pod.ts); its generated
 * clients for nodes, leases and events still bring the model serializer.
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
