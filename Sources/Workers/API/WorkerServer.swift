import Entitlements
import Foundation
import HTTPTypes
import Hummingbird
import Logging

/// The HTTP server of `tollgate work`: health, readiness (the store answers), Prometheus metrics and
/// the entitlement API. In `tollgate dev` the gateway's server carries the API instead.
public struct WorkerServer: Sendable {
    let host: String
    let port: Int
    let api: EntitlementAPI
    let store: EntitlementStore
    let exposition: @Sendable () -> String
    let logger: Logger

    public init(host: String, port: Int, api: EntitlementAPI, store: EntitlementStore,
                exposition: @escaping @Sendable () -> String, logger: Logger) {
        self.host = host
        self.port = port
        self.api = api
        self.store = store
        self.exposition = exposition
        self.logger = logger
    }

    public func makeRouter() -> Router<BasicRequestContext> {
        let router = Router(context: BasicRequestContext.self)
        api.register(on: router)
        router.get("/healthz") { _, _ in EntitlementAPI.json(.ok, Data(#"{"status":"ok"}"#.utf8)) }
        router.get("/readyz") { [store] _, _ in
            await store.ping()
                ? EntitlementAPI.json(.ok, Data(#"{"ready":true,"detail":"ok"}"#.utf8))
                : EntitlementAPI.json(.serviceUnavailable, Data(#"{"ready":false,"detail":"the entitlement store does not answer"}"#.utf8))
        }
        router.get("/metrics") { [exposition] _, _ in
            var headers = HTTPFields()
            headers[.contentType] = "text/plain; version=0.0.4; charset=utf-8"
            return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(string: exposition())))
        }
        return router
    }

    public func makeApplication(onListening: @escaping @Sendable (Int) async -> Void = { _ in }) -> some ApplicationProtocol {
        Application(
            router: makeRouter(),
            configuration: ApplicationConfiguration(address: .hostname(host, port: port), serverName: "tollgate-workers"),
            onServerRunning: { channel in await onListening(channel.localAddress?.port ?? port) },
            logger: logger)
    }
}
