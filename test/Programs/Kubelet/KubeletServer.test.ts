import type { V1Pod } from "@kubernetes/client-node"
import { assert, describe, it } from "@effect/vitest"
import { Context, Effect, Exit, Fiber, Layer, Option, Scope } from "effect"
import { generateKeyPairSync, X509Certificate } from "node:crypto"
import { writeFile } from "node:fs/promises"
import { join } from "node:path"
import * as tls from "node:tls"
import * as KubeletServerLive from "../../../src/Programs/Kubelet/KubeletServer.ts"
import { KubeletPods, KubeletServer } from "../../../src/Services/KubeletServer.ts"
import { KubeApi } from "../../../src/Services/KubeApi.ts"
import { certificateDer, generateSelfSigned } from "../../../src/Programs/Kubelet/SelfSigned.ts"
import type { AppConfigShape } from "../../../src/Schemas/Config.ts"
import { testConfig } from "../../../testkit/Config.ts"
import { AppConfig } from "../../../src/Services/Config.ts"
import { tempDir as makeTempDir } from "../../support/TempDir.ts"
import { scriptedReviews, user } from "../../support/KubeletReviews.ts"
import { type As, kubeletRequest, makeClientCa, serverAuthUsage } from "../../support/KubeletClient.ts"

// ---- helpers ----------------------------------------------------------------------------------

const pod: V1Pod = {
  apiVersion: "v1",
  kind: "Pod",
  metadata: { name: "web", namespace: "default", uid: "u-1" },
  spec: { containers: [{ name: "c", image: "i" }], nodeName: "vk-sandboxd" }
}

const serverConfig = (overrides: Partial<AppConfigShape> = {}) =>
  testConfig({ listenAddr: { host: "127.0.0.1", port: 0 }, nodeIp: "10.1.2.3", ...overrides })

/**
 * The apiserver's answers: an admin token allowed everything, a metrics reader's allowed
 * nodes/metrics and nodes/stats only, and the certificate user the test CA signs allowed everything.
 */
const reviews = () =>
  scriptedReviews({
    tokens: { "admin-token": user("admin", ["system:masters"]), "reader-token": user("metrics-reader") },
    allows: (access) =>
      access.user.name === "admin" || access.user.name === "system:kube-apiserver" ||
      (access.user.name === "metrics-reader" && ["metrics", "stats"].includes(access.subresource))
  })

const asAdmin: As = { token: "admin-token" }
const asReader: As = { token: "reader-token" }

const withServer = <A, E>(
  config: AppConfigShape,
  use: (server: KubeletServer["Service"]) => Effect.Effect<A, E>
) =>
  Effect.gen(function*() {
    const server = yield* KubeletServer
    return yield* use(server)
  }).pipe(
    Effect.provide(
      KubeletServerLive.layer({ allowEphemeralPort: true }).pipe(
        Layer.provide(AppConfig.layer(config)),
        Layer.provide(Layer.succeed(KubeletPods, { getPods: Effect.succeed([pod]) })),
        Layer.provide(Layer.succeed(KubeApi, reviews().kube))
      ),
      { local: true }
    )
  )

const request = kubeletRequest

interface Handshake {
  readonly protocol: string | null
  readonly alpn: string | false | null
  readonly peerCertificate: Buffer
}

const handshake = (port: number, options: tls.ConnectionOptions): Effect.Effect<Handshake, Error> =>
  Effect.callback<Handshake, Error>((resume) => {
    const socket = tls.connect({ host: "127.0.0.1", port, rejectUnauthorized: false, ...options }, () => {
      const result = {
        protocol: socket.getProtocol(),
        alpn: socket.alpnProtocol,
        peerCertificate: socket.getPeerCertificate().raw
      }
      socket.end()
      resume(Effect.succeed(result))
    })
    socket.on("error", (e) => resume(Effect.fail(e)))
  })

/** A raw request on a TLS socket, read until the server closes: what a SPDY client sees. */
const rawExchange = (port: number, requestText: string): Effect.Effect<string, Error> =>
  Effect.callback<string, Error>((resume) => {
    const chunks: Array<Buffer> = []
    const socket = tls.connect({ host: "127.0.0.1", port, rejectUnauthorized: false }, () => {
      socket.write(requestText)
    })
    socket.on("data", (chunk: Buffer) => chunks.push(chunk))
    socket.on("end", () => resume(Effect.succeed(Buffer.concat(chunks).toString("utf8"))))
    socket.on("error", (e) => resume(Effect.fail(e)))
  })

const tempDir = makeTempDir("kubelet-tls-")

const writeText = (path: string, text: string) => Effect.promise(() => writeFile(path, text))

// ---- TLS --------------------------------------------------------------------------------------

describe("KubeletServer TLS", () => {
  it.live("accepts TLS 1.2 and TLS 1.3 and offers only http/1.1 in ALPN", () =>
    withServer(serverConfig(), (server) =>
      Effect.gen(function*() {
        const v12 = yield* handshake(server.port, { minVersion: "TLSv1.2", maxVersion: "TLSv1.2" })
        assert.strictEqual(v12.protocol, "TLSv1.2")
        const v13 = yield* handshake(server.port, { minVersion: "TLSv1.3", maxVersion: "TLSv1.3" })
        assert.strictEqual(v13.protocol, "TLSv1.3")
        const alpn = yield* handshake(server.port, { ALPNProtocols: ["h2", "http/1.1"] })
        assert.strictEqual(alpn.alpn, "http/1.1")
        const h2Only = yield* Effect.exit(handshake(server.port, { ALPNProtocols: ["h2"] }))
        // A client that insists on h2 gets no protocol or no connection, never h2.
        if (Exit.isSuccess(h2Only)) assert.notStrictEqual(h2Only.value.alpn, "h2")
      })))

  it.live("refuses TLS 1.1 from a client that can speak it", () =>
    Effect.gen(function*() {
      const tls11Client = {
        minVersion: "TLSv1.1",
        maxVersion: "TLSv1.1",
        ciphers: "DEFAULT@SECLEVEL=0"
      } as const
      // Control: the same client completes a TLS 1.1 handshake with a server that allows it, so
      // the refusal below is the kubelet server's doing.
      const cert = yield* generateSelfSigned("control", "")
      const control = tls.createServer({
        cert: cert.certPem,
        key: cert.keyPem,
        minVersion: "TLSv1.1",
        ciphers: "DEFAULT@SECLEVEL=0"
      }, (socket) => socket.end())
      const controlPort = yield* Effect.acquireRelease(
        Effect.callback<number>((resume) => {
          control.listen(0, "127.0.0.1", () => {
            resume(Effect.succeed((control.address() as { port: number }).port))
          })
        }),
        () =>
          Effect.callback<void>((resume) => {
            control.close(() => resume(Effect.void))
          })
      )
      const accepted = yield* handshake(controlPort, tls11Client)
      assert.strictEqual(accepted.protocol, "TLSv1.1")

      yield* withServer(serverConfig(), (server) =>
        Effect.gen(function*() {
          const refused = yield* Effect.exit(handshake(server.port, tls11Client))
          assert.isTrue(Exit.isFailure(refused))
        }))
    }))

  it.live("self-signs an ECDSA P-256 certificate with the node's SANs, valid for ten years", () =>
    withServer(serverConfig({ nodeName: "vk-sandboxd", nodeIp: "10.1.2.3" }), (server) =>
      Effect.gen(function*() {
        assert.strictEqual(server.tls.source, "self-signed")
        const presented = yield* handshake(server.port, {})
        const cert = new X509Certificate(presented.peerCertificate)
        assert.strictEqual(cert.publicKey.asymmetricKeyType, "ec")
        assert.strictEqual(cert.publicKey.asymmetricKeyDetails?.namedCurve, "prime256v1")
        assert.strictEqual(cert.subjectAltName, "DNS:vk-sandboxd, IP Address:10.1.2.3, IP Address:127.0.0.1")
        assert.strictEqual(cert.subject, "CN=vk-sandbox")
        assert.isFalse(cert.ca)
        assert.deepStrictEqual(cert.keyUsage, ["1.3.6.1.5.5.7.3.1"]) // extended key usage: serverAuth
        const notBefore = Date.parse(cert.validFrom)
        const notAfter = Date.parse(cert.validTo)
        const now = Date.now()
        assert.isTrue(notBefore <= now - 3_500_000 && notBefore >= now - 3_700_000, cert.validFrom)
        assert.strictEqual(notAfter - notBefore, (3650 * 24 + 1) * 3600_000)
        assert.isTrue(cert.checkHost("vk-sandboxd") !== undefined)
        assert.isTrue(cert.checkIP("127.0.0.1") !== undefined)
        assert.strictEqual(cert.toString().trim(), server.tls.certPem.trim())
      })))

  it.live("an IP node name becomes an IP SAN", () =>
    withServer(serverConfig({ nodeName: "192.168.7.7", nodeIp: "" }), (server) =>
      Effect.gen(function*() {
        const cert = new X509Certificate(server.tls.certPem)
        assert.strictEqual(cert.subjectAltName, "IP Address:192.168.7.7, IP Address:127.0.0.1")
      })))

  it.live("an IPv6 node IP becomes an IP SAN; the certificate is signed by its own key", () =>
    Effect.gen(function*() {
      for (const [nodeIp, shown] of [
        ["fd00::1", "FD00:0:0:0:0:0:0:1"],
        ["2001:db8:85a3::8a2e:370:7334", "2001:DB8:85A3:0:0:8A2E:370:7334"],
        ["::ffff:10.1.2.3", "0:0:0:0:0:FFFF:A01:203"]
      ] as const) {
        const cert = new X509Certificate((yield* generateSelfSigned("vk-sandboxd", nodeIp)).certPem)
        assert.strictEqual(cert.subjectAltName, `DNS:vk-sandboxd, IP Address:${shown}, IP Address:127.0.0.1`)
        assert.strictEqual(cert.checkIP(nodeIp), nodeIp)
        assert.isTrue(cert.verify(cert.publicKey))
      }
    }))

  it("DER forms a default certificate does not reach: GeneralizedTime from 2050, long lengths, a big serial", () => {
    const { publicKey, privateKey } = generateKeyPairSync("ec", { namedCurve: "prime256v1" })
    // 200 bytes: the SAN's length takes the 0x81 form, the extension's and the TBS's the 0x82 one.
    const longName = `${"a".repeat(63)}.${"b".repeat(63)}.${"c".repeat(63)}.example`
    const der = certificateDer({
      serial: Buffer.from([0x00, 0xff, 0x01, 0x02]),
      notBefore: Date.UTC(2049, 11, 31, 23, 59, 59),
      notAfter: Date.UTC(2051, 5, 1, 12, 0, 0),
      sans: [{ type: "dns", value: longName }, { type: "ip", value: "10.0.0.1" }],
      publicKey,
      privateKey
    })
    const cert = new X509Certificate(der)
    // UTCTime before 2050, GeneralizedTime from 2050 on (a UTCTime "51" would read as 1951).
    assert.strictEqual(new Date(cert.validFrom).toISOString(), "2049-12-31T23:59:59.000Z")
    assert.strictEqual(new Date(cert.validTo).toISOString(), "2051-06-01T12:00:00.000Z")
    assert.strictEqual(cert.subjectAltName, `DNS:${longName}, IP Address:10.0.0.1`)
    // the positive INTEGER 0xFF0102: its 0x00 sign byte is part of the encoding, not of the number
    assert.strictEqual(cert.serialNumber.toUpperCase(), "FF0102")
    assert.isTrue(cert.verify(cert.publicKey))
  })

  it.live("serves the --tls-cert/--tls-key pair when both are given", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const pair = yield* generateSelfSigned("from-files", "")
      yield* writeText(join(dir, "tls.crt"), pair.certPem)
      yield* writeText(join(dir, "tls.key"), pair.keyPem)
      yield* withServer(
        serverConfig({ tlsCert: join(dir, "tls.crt"), tlsKey: join(dir, "tls.key") }),
        (server) =>
          Effect.gen(function*() {
            assert.strictEqual(server.tls.source, "flags")
            const presented = yield* handshake(server.port, {})
            assert.strictEqual(
              new X509Certificate(presented.peerCertificate).fingerprint256,
              new X509Certificate(pair.certPem).fingerprint256
            )
          })
      )
      // A given pair that is not two readable files is an error, never a fallback to self-signing.
      const oneMissing = yield* Effect.flip(withServer(serverConfig({ tlsCert: join(dir, "tls.crt"), tlsKey: "" }), () => Effect.void))
      assert.strictEqual(oneMissing._tag, "KubeletTlsError")
      const directory = yield* Effect.flip(withServer(serverConfig({ tlsCert: join(dir, "tls.crt"), tlsKey: dir }), () => Effect.void))
      assert.strictEqual(directory._tag, "KubeletTlsError")
      const absent = yield* Effect.flip(
        withServer(serverConfig({ tlsCert: join(dir, "absent.crt"), tlsKey: join(dir, "tls.key") }), () => Effect.void)
      )
      assert.strictEqual(absent._tag, "KubeletTlsError")
      assert.include(absent.message, join(dir, "absent.crt"))
    }))

  it.live("refuses to start with a present but unloadable key pair", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const one = yield* generateSelfSigned("one", "")
      const other = yield* generateSelfSigned("other", "")
      yield* writeText(join(dir, "tls.crt"), one.certPem)
      yield* writeText(join(dir, "wrong.key"), other.keyPem)
      yield* writeText(join(dir, "garbage.key"), "not a key\n")
      const mismatched = yield* Effect.flip(
        withServer(serverConfig({ tlsCert: join(dir, "tls.crt"), tlsKey: join(dir, "wrong.key") }), () => Effect.void)
      )
      assert.strictEqual(mismatched._tag, "KubeletTlsError")
      const garbage = yield* Effect.flip(
        withServer(serverConfig({ tlsCert: join(dir, "tls.crt"), tlsKey: join(dir, "garbage.key") }), () => Effect.void)
      )
      assert.strictEqual(garbage._tag, "KubeletTlsError")
      assert.include(garbage.message, "garbage.key")
    }))

  it.live("refuses port 0 unless the options allow it", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(
        Effect.provide(
          Effect.gen(function*() {
            return yield* KubeletServer
          }),
          KubeletServerLive.layer().pipe(
            Layer.provide(AppConfig.layer(serverConfig())),
            Layer.provide(Layer.succeed(KubeletPods, { getPods: Effect.succeed([]) })),
            Layer.provide(Layer.succeed(KubeApi, reviews().kube))
          ),
          { local: true }
        )
      )
      assert.strictEqual(error._tag, "KubeletListenError")
    }))
})

// ---- routes -----------------------------------------------------------------------------------

describe("KubeletServer routes", () => {
  it.live("logs and an exec upgrade get a 501 pointing at the sandbox SDK", () =>
    withServer(serverConfig(), (server) =>
      Effect.gen(function*() {
        const logs = yield* request(server.port, "GET", "/containerLogs/default/web/c?follow=true&tailLines=10", asAdmin)
        assert.strictEqual(logs.status, 501)
        assert.include(logs.body, "sandbox SDK")
        assert.include(logs.body, "preview URLs")

        for (const path of ["/exec/default/web/c?command=sh&input=1&output=1&tty=1", "/portForward/default/web"]) {
          const raw = yield* rawExchange(
            server.port,
            `POST ${path} HTTP/1.1\r\nHost: kubelet\r\nAuthorization: Bearer admin-token\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\n` +
              `X-Stream-Protocol-Version: v4.channel.k8s.io\r\nContent-Length: 0\r\n\r\n`
          )
          assert.match(raw, /^HTTP\/1\.1 501 /, raw)
          assert.include(raw, "sandbox SDK")
        }
        const websocket = yield* rawExchange(
          server.port,
          "GET /attach/default/web/c?output=1 HTTP/1.1\r\nHost: kubelet\r\nAuthorization: Bearer admin-token\r\n" +
            "Connection: Upgrade\r\nUpgrade: websocket\r\n" +
            "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n"
        )
        assert.match(websocket, /^HTTP\/1\.1 501 /, websocket)

        const plainExec = yield* request(server.port, "POST", "/exec/default/web/c?command=ls&output=1", asAdmin)
        assert.strictEqual(plainExec.status, 501)
        assert.include(plainExec.body, "sandbox SDK")
      })))

  it.live("stats and metrics are empty", () =>
    withServer(serverConfig(), (server) =>
      Effect.gen(function*() {
        const stats = yield* request(server.port, "GET", "/stats/summary", asReader)
        assert.strictEqual(stats.status, 200)
        assert.deepStrictEqual(JSON.parse(stats.body), { node: { nodeName: "vk-sandboxd", startTime: null }, pods: [] })
        const metrics = yield* request(server.port, "GET", "/metrics/resource", asReader)
        assert.strictEqual(metrics.status, 200)
        assert.strictEqual(metrics.body, "")
        assert.strictEqual(metrics.headers["content-type"], "text/plain; version=0.0.4")
        const healthz = yield* request(server.port, "GET", "/healthz")
        assert.strictEqual(healthz.status, 200)
        assert.strictEqual(healthz.body, "ok")
      })))

  it.live("unknown paths are 404 and wrong methods 405", () =>
    withServer(serverConfig(), (server) =>
      Effect.gen(function*() {
        for (const path of ["/metrics", "/spec", "/configz", "/logs/", "/exec/default/web", "/containerLogs/a/b/c/d"]) {
          const reply = yield* request(server.port, "GET", path, asAdmin)
          assert.strictEqual(reply.status, 404, path)
          assert.strictEqual(reply.body, "404 request not found\n")
        }
        const deleteLogs = yield* request(server.port, "DELETE", "/containerLogs/default/web/c", asAdmin)
        assert.strictEqual(deleteLogs.status, 405)
        assert.strictEqual(deleteLogs.body, "")
        const putExec = yield* request(server.port, "PUT", "/exec/default/web/c", asAdmin)
        assert.strictEqual(putExec.status, 405)
        assert.strictEqual(putExec.headers["allow"], "GET, POST")
        const postStats = yield* request(server.port, "POST", "/stats/summary", asAdmin)
        assert.strictEqual(postStats.status, 405)
      })))

  it.live("a request target that is not a URL is 400, from anyone, and the server goes on", () =>
    withServer(serverConfig(), (server) =>
      Effect.gen(function*() {
        for (const target of ["http://[", "https://user@/pods"]) {
          const raw = yield* rawExchange(server.port, `GET ${target} HTTP/1.1\r\nHost: kubelet\r\nConnection: close\r\n\r\n`)
          assert.match(raw, /^HTTP\/1\.1 400 /, `${target}: ${raw}`)
          assert.include(raw, "400 Bad Request: the request target is not a URL path\n")
        }
        assert.strictEqual((yield* request(server.port, "GET", "/stats/summary", asReader)).status, 200)
      })))

  it.live("KAPI-1, KAPI-2: anonymous is 401 but on /healthz; /pods needs nodes/pods or nodes/proxy", () =>
    withServer(serverConfig(), (server) =>
      Effect.gen(function*() {
        assert.isFalse(server.clientCertificatesAccepted)
        const healthz = yield* request(server.port, "GET", "/healthz")
        assert.strictEqual(healthz.status, 200)
        for (const path of ["/pods", "/runningpods/", "/stats/summary", "/metrics/resource", "/exec/default/web/c", "/nowhere"]) {
          const anonymous = yield* request(server.port, "GET", path)
          assert.strictEqual(anonymous.status, 401, path)
          assert.strictEqual(anonymous.body, "401 Unauthorized: no client certificate and no bearer token\n")
          const stranger = yield* request(server.port, "GET", path, { token: "nobody-knows-this" })
          assert.strictEqual(stranger.status, 401, path)
          assert.include(stranger.body, "rejected by the apiserver's TokenReview")
        }
        for (const path of ["/pods", "/runningpods/"]) {
          const reader = yield* request(server.port, "GET", path, asReader)
          assert.strictEqual(reader.status, 403, path)
          assert.strictEqual(
            reader.body,
            `403 Forbidden: user "metrics-reader" may not get nodes/pods or nodes/proxy of node vk-sandboxd\n`
          )
          assert.notInclude(reader.body, "web")
          const admin = yield* request(server.port, "GET", path, asAdmin)
          assert.strictEqual(admin.status, 200, path)
          assert.deepStrictEqual(JSON.parse(admin.body).items.map((p: V1Pod) => p.metadata?.name), ["web"])
        }
      })))

  it.live("client-CA mode: no certificate may use a token, a certificate from the CA names the user, any other is 401", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const ca = yield* makeClientCa
      const otherCa = yield* makeClientCa
      yield* writeText(join(dir, "ca.crt"), ca.caPem)
      yield* withServer(serverConfig({ clientCaFile: join(dir, "ca.crt") }), (server) =>
        Effect.gen(function*() {
          assert.isTrue(server.clientCertificatesAccepted)
          // Asked for, not required: the handshake completes without one.
          assert.strictEqual((yield* request(server.port, "GET", "/healthz")).status, 200)
          assert.strictEqual((yield* request(server.port, "GET", "/pods")).status, 401)
          assert.strictEqual((yield* request(server.port, "GET", "/pods", asAdmin)).status, 200)

          // A certificate the CA did not sign is refused, even beside a good token.
          const stranger = yield* request(server.port, "GET", "/pods", {
            certificate: yield* otherCa.issue("CN=system:kube-apiserver"),
            token: "admin-token"
          })
          assert.strictEqual(stranger.status, 401)
          assert.include(stranger.body, "not signed by --client-ca-file")
          // Signed, but for serving only: not a client certificate.
          const wrongUse = yield* request(server.port, "GET", "/pods", {
            certificate: yield* ca.issue("CN=system:kube-apiserver", serverAuthUsage)
          })
          assert.strictEqual(wrongUse.status, 401)

          // Two CNs: the user is the last, as the apiserver's x509 authenticator (Go's CommonName)
          // names it; the first would make one certificate two users.
          const twoNames = { certificate: yield* ca.issue("CN=system:kube-apiserver, CN=metrics-reader") }
          assert.strictEqual((yield* request(server.port, "GET", "/pods", twoNames)).status, 403)
          assert.strictEqual((yield* request(server.port, "GET", "/stats/summary", twoNames)).status, 200)

          const client = { certificate: yield* ca.issue("CN=system:kube-apiserver") }
          for (const path of ["/pods", "/runningpods/"]) {
            const reply = yield* request(server.port, "GET", path, client)
            assert.strictEqual(reply.status, 200, path)
            assert.strictEqual(reply.headers["content-type"], "application/json")
            const list = JSON.parse(reply.body)
            assert.strictEqual(list.kind, "PodList")
            assert.strictEqual(list.apiVersion, "v1")
            assert.deepStrictEqual(list.items.map((p: V1Pod) => p.metadata?.name), ["web"])
          }
        }))
    }))

  it.live("an unparsable client CA file is a startup error", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      yield* writeText(join(dir, "ca.crt"), "nonsense\n")
      const error = yield* Effect.flip(
        withServer(serverConfig({ clientCaFile: join(dir, "ca.crt") }), () => Effect.void)
      )
      assert.strictEqual(error._tag, "KubeletTlsError")
      const missing = yield* Effect.flip(
        withServer(serverConfig({ clientCaFile: join(dir, "absent.crt") }), () => Effect.void)
      )
      assert.strictEqual(missing._tag, "KubeletTlsError")
    }))
})

describe("KubeletServer header timeout (H-01)", () => {
  it("the server waits 30 s for a request's headers and has no other request timeout, unless a test says otherwise", () => {
    const material = { certPem: "cert", keyPem: "key", clientCaPem: Option.none<string>() }
    const defaults = KubeletServerLive.httpsOptions(material, {})
    assert.strictEqual(defaults.headersTimeout, 30_000)
    assert.strictEqual(defaults.requestTimeout, 0)
    assert.isUndefined(defaults.connectionsCheckingInterval, "Node's own checking interval")
    assert.strictEqual(KubeletServerLive.httpsOptions(material, { headersTimeoutMillis: 250 }).headersTimeout, 250)
  })

  it.live("a client that never finishes its headers is answered 408 and cut off once the header timeout passes", () =>
    Effect.gen(function*() {
      const options = { allowEphemeralPort: true, headersTimeoutMillis: 300, connectionsCheckingIntervalMillis: 50 }
      const reply = yield* Effect.scoped(Effect.gen(function*() {
        const server = yield* Layer.build(
          KubeletServerLive.layer(options).pipe(
            Layer.provide(AppConfig.layer(serverConfig())),
            Layer.provide(Layer.succeed(KubeletPods, { getPods: Effect.succeed([pod]) })),
            Layer.provide(Layer.succeed(KubeApi, reviews().kube))
          )
        ).pipe(Effect.map(Context.get(KubeletServer)))
        // Everything the server sends until it closes the connection: the receipt that it did.
        return yield* Effect.callback<string, Error>((resume) => {
          const chunks: Array<Buffer> = []
          const socket = tls.connect({ host: "127.0.0.1", port: server.port, rejectUnauthorized: false }, () => {
            socket.write("GET /healthz HTTP/1.1\r\nHost: kubelet\r\n")
          })
          socket.on("data", (chunk: Buffer) => chunks.push(chunk))
          socket.on("close", () => resume(Effect.succeed(Buffer.concat(chunks).toString("utf8"))))
          socket.on("error", (e) => resume(Effect.fail(e)))
        })
      }))
      assert.match(reply, /^HTTP\/1\.1 408 /)
    }))
})

describe("KubeletServer shutdown", () => {
  it.live("a client stuck mid-request does not hold the close past the grace", () =>
    Effect.gen(function*() {
      const scope = yield* Scope.make()
      const server = yield* Layer.buildWithScope(
        KubeletServerLive.layer({ allowEphemeralPort: true, headersTimeoutMillis: 120_000, closeGraceMillis: 200 }).pipe(
          Layer.provide(AppConfig.layer(serverConfig())),
          Layer.provide(Layer.succeed(KubeletPods, { getPods: Effect.succeed([pod]) })),
          Layer.provide(Layer.succeed(KubeApi, reviews().kube))
        ),
        scope
      ).pipe(Effect.map(Context.get(KubeletServer)))
      // Headers begun but never finished: the connection is active, not idle.
      const socket = yield* Effect.callback<tls.TLSSocket, Error>((resume) => {
        const s = tls.connect({ host: "127.0.0.1", port: server.port, rejectUnauthorized: false }, () => {
          s.write("GET /healthz HTTP/1.1\r\nHost: kubelet\r\n", () => resume(Effect.succeed(s)))
        })
        s.on("error", () => undefined)
      })
      const closedBy = Effect.callback<void>((resume) => {
        if (socket.destroyed) return resume(Effect.void)
        socket.once("close", () => resume(Effect.void))
      })
      // Closing runs uninterruptibly: race its fiber rather than the close itself.
      const closing = yield* Effect.forkDetach(Scope.close(scope, Exit.void))
      const closed = yield* Fiber.join(closing).pipe(Effect.timeout("5 seconds"), Effect.exit)
      socket.destroy()
      assert.isTrue(Exit.isSuccess(closed), "the server closed within the bound")
      yield* closedBy
    }))
})
