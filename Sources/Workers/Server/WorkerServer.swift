import Entitlements
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import ServiceHost
import Store

/// The HTTP server of `tollgate work`: `HealthRoutes` (ready while the store answers) and the
/// workers' APIs (`EntitlementWorkers.routes`). In `tollgate dev` the gateway's server carries the API instead.
struct WorkerServer: Sendable {
    let host: String
    let port: Int
    let routes: RouteGroup
    let store: EntitlementStore
    /// Nil when `/metrics` has a listener of its own (`metrics.port`).
    let exposition: (@Sendable () -> String)?
    let logger: Logger

    func makeRouter() -> Router<BasicRequestContext> {
        let router = Router(context: BasicRequestContext.self)
        router.add(middleware: ProtocolErrorMiddleware(methods: HealthRoutes.methods(servingMetrics: exposition != nil)
            .merging(routes.methods) { first, _ in first }))
        routes.register(on: router)
        HealthRoutes(readiness: { [store] in
            await store.ping()
                ? ReadinessAnswer(ready: true, json: #"{"ready":true,"detail":"ok"}"#)
                : ReadinessAnswer(ready: false, json: #"{"ready":false,"detail":"the entitlement store does not answer"}"#)
        }, exposition: exposition).register(on: router)
        return router
    }

    func makeApplication(onListening: @escaping @Sendable (Int) async -> Void) -> some ApplicationProtocol {
        Application(
            router: makeRouter(),
            configuration: ApplicationConfiguration(address: .hostname(host, port: port), serverName: "tollgate-workers"),
            onServerRunning: { channel in await onListening(channel.localAddress?.port ?? port) },
            logger: logger)
    }
}
