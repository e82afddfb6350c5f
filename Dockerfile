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
# One malloc arena for the whole process. glibc gives each thread that allocates its own arena
# (V8's compiler and GC helper threads, libuv's pool), and an arena keeps what its thread touched:
# after a burst of 2000 Pods bound at once the extra arenas held ~12-20 MB more resident memory
# than one (bench: rss_per_pod_kb ~24-26 -> ~19-21, peak RSS ~153 -> ~141 MB, the daemon's CPU
# for the burst unchanged). bin/vk-sandbox and the bench set the same (test/Packaging/Dockerfile.test.ts).
ENV MALLOC_ARENA_MAX=1
WORKDIR /app
COPY package.json ./
COPY --from=deps /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY --from=stamp /app/build-info.json ./build-info.json
# Node's compile cache (V8 code cache) of the bundle, made here so no start compiles the 3.5 MB
# bundle's top level again (~0.1-0.15 s of CPU per start). Node keeps it under a directory named
# for the Node version, V8's flag tag and the uid, and each entry for the file's path and content,
# so it is made by the entrypoint's own command, flags and user on these very files; a start that
# finds no matching entry compiles as before and cannot write here (read-only after this step, as
# under the chart's readOnlyRootFilesystem), silently. NODE_DISABLE_COMPILE_CACHE=1 turns it off.
ENV NODE_COMPILE_CACHE=/app/compile-cache
RUN mkdir /app/compile-cache && chown 65532:65532 /app/compile-cache
USER 65532:65532
RUN node --max-semi-space-size=2 /app/dist/main.js --version > /dev/null \
 && find /app/compile-cache -type f | grep -q . \
 && chmod -R a-w /app/compile-cache
EXPOSE 10260 10261
# --max-semi-space-size=2 caps V8's young generation at 2 MB per semi-space: a burst of 2000 Pods
# bound at once otherwise lifts the peak RSS by ~180 MB of short-lived garbage (docs/operations.md,
# "Memory"). It is not a limit. The daemon sets the other heap setting itself once its code is
# loaded (src/Cli/HeapFlags.ts): as a flag here it would make V8 reject the code caches. The RUN
# above, bin/vk-sandbox and the bench use the same flags (the bench reads them from this line;
# test/Packaging/Dockerfile.test.ts holds them together).
ENTRYPOINT ["node", "--max-semi-space-size=2", "/app/dist/main.js"]
