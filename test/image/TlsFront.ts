/**
 * TLS in front of the apiserver simulator, which speaks plain HTTP: the daemon in the container
 * reaches it as in a cluster (https, the CA from its service account or kubeconfig), and, when a
 * client certificate is required, authenticates with one. Bytes are piped both ways after the
 * handshake; a connection without a valid client certificate never reaches the simulator.
 */
import * as net from "node:net"
import * as tls from "node:tls"
import { Effect, type Scope } from "effect"
import type { Pki } from "../k8s/fixture/Pki.ts"

export interface TlsFront {
  readonly port: number
}

export const tlsFront = (
  targetPort: number,
  pki: Pki,
  options: { readonly requireClientCert: boolean }
): Effect.Effect<TlsFront, never, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.callback<{ readonly server: tls.Server; readonly sockets: Set<net.Socket>; readonly port: number }>((resume) => {
      const sockets = new Set<net.Socket>()
      const server = tls.createServer({
        cert: pki.servingCertPem,
        key: pki.servingKeyPem,
        ca: pki.caCertPem,
        requestCert: options.requireClientCert,
        rejectUnauthorized: options.requireClientCert
      }, (front) => {
        const back = net.connect(targetPort, "127.0.0.1")
        for (const socket of [front, back]) {
          sockets.add(socket)
          socket.on("close", () => sockets.delete(socket))
        }
        front.pipe(back).pipe(front)
        front.on("error", () => back.destroy())
        back.on("error", () => front.destroy())
      })
      server.on("tlsClientError", () => {})
      server.listen(0, "127.0.0.1", () => {
        const address = server.address()
        resume(Effect.succeed({ server, sockets, port: typeof address === "object" && address !== null ? address.port : 0 }))
      })
    }),
    ({ server, sockets }) =>
      Effect.callback<void>((resume) => {
        server.close(() => resume(Effect.void))
        for (const socket of sockets) socket.destroy()
      })
  ).pipe(Effect.map(({ port }) => ({ port })))
