# syntax=docker/dockerfile:1
# Build:  docker build --build-arg REVISION=$(git rev-parse HEAD) \
#           --build-arg BUILT_AT=$(date -u +%Y-%m-%dT%H:%M:%SZ) -t vk-sandbox .
# `vk-sandbox --version` prints that revision and time (build-info.json at the package root).

# Build stage: full install (the bundler is a dev dependency), bundle src/ into dist/.
FROM node:24-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
# the "vk-sandbox": "file:." dev dependency links the package's own bin
COPY bin ./bin
RUN npm ci --omit=optional --no-audit --no-fund
COPY tsconfig.json rolldown.config.mjs ./
COPY src ./src
RUN npm run build

# Production dependencies only (for whatever the bundle leaves to node_modules), installed here so
# the runtime stage needs no npm.
FROM node:24-bookworm-slim AS deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --omit=optional --no-audit --no-fund --ignore-scripts

# The revision the image is built from; the build fails without one, so --version never guesses.
FROM node:24-bookworm-slim AS stamp
ARG REVISION=""
ARG BUILT_AT=""
WORKDIR /app
RUN test -n "$REVISION" || { echo "pass --build-arg REVISION=<git commit>" >&2; exit 1; } \
 && printf '{"revision":"%s","builtAt":"%s"}\n' "$REVISION" "${BUILT_AT:-unknown}" > build-info.json

# Runtime stage: node, the compiled entry and its production dependencies; npm, npx, corepack
# and yarn removed, so nothing in the image can fetch and run packages. Runs as uid/gid 65532,
# the same numeric user the Helm chart sets (podSecurityContext.runAsUser/runAsGroup).
FROM node:24-bookworm-slim
RUN rm -rf /usr/local/lib/node_modules /usr/local/bin/npm /usr/local/bin/npx /usr/local/bin/corepack \
      /usr/local/bin/yarn /usr/local/bin/yarnpkg /opt/yarn-* /root/.npm
ENV NODE_ENV=production
WORKDIR /app
COPY package.json ./
COPY --from=deps /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY --from=stamp /app/build-info.json ./build-info.json
USER 65532:65532
EXPOSE 10260 10261
# --max-semi-space-size=2 caps V8's young generation at 2 MB per semi-space, and
# --heap-growing-percent=50 lets the old generation grow by 1.5x between major collections instead
# of V8's own, larger factor: a burst of 2000 Pods bound at once otherwise lifts the peak RSS by
# ~180 MB of short-lived garbage (docs/operations.md, "Memory"). Neither is a limit. bin/vk-sandbox and the bench use the same flags (the
# bench reads them from this line; test/Packaging/Dockerfile.test.ts holds the three together).
ENTRYPOINT ["node", "--max-semi-space-size=2", "--heap-growing-percent=50", "/app/dist/main.js"]
