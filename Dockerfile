# syntax=docker/dockerfile:1
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

# Runtime stage: production dependencies only, the compiled entry, a non-root user.
FROM node:24-bookworm-slim
ENV NODE_ENV=production
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --omit=optional --no-audit --no-fund && npm cache clean --force
COPY --from=build /app/dist ./dist
# The image runs as the unprivileged "node" user by default; the Helm chart documents running
# as root when the hostPath state directory is root-owned.
USER node
EXPOSE 10260 10261
ENTRYPOINT ["node", "/app/dist/main.js"]
