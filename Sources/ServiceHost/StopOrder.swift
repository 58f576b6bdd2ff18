import Logging
import ServiceLifecycle
import UnixSignals

/// A process's services in the order they stop on graceful shutdown: each is told to stop once the one
/// before it has returned. They start in the opposite order, so a service can rely on every one listed
/// after it (the HTTP server is listed before the producer it publishes to: it starts after it and
/// stops before it).
public struct StopOrder: Sendable {
    public struct Step: Sendable {
        public let name: String
        let service: any Service

        /// A service that stops when ServiceGroup's graceful shutdown reaches it, and returns once stopped.
        public static func stop(_ name: String, _ service: any Service) -> Self {
            Self(name: name, service: service)
        }

        /// Something the services listed before it use until they have stopped (the producer, the spool,
        /// the store): `close` runs when the graceful shutdown reaches it, or on cancellation.
        public static func close(_ name: String, _ close: @escaping @Sendable () async -> Void) -> Self {
            Self(name: name, service: ClosureService {
                try? await gracefulShutdown()
                await close()
            })
        }
    }

    public let steps: [Step]

    public init(_ steps: [Step]) { self.steps = steps }

    public var names: [String] { steps.map(\.name) }

    /// The steps as one ServiceGroup, which shuts down gracefully on `gracefulShutdownSignals` (none: when
    /// its own graceful shutdown is triggered, or its parent group's). ServiceGroup starts its services in
    /// the order listed and shuts them down from the last to the first, so it gets them reversed.
    public func serviceGroup(gracefulShutdownSignals: [UnixSignal] = [], logger: Logger) -> ServiceGroup {
        ServiceGroup(configuration: ServiceGroupConfiguration(
            services: steps.reversed().map { ServiceGroupConfiguration.ServiceConfiguration(service: $0.service, serviceName: $0.name) },
            gracefulShutdownSignals: gracefulShutdownSignals,
            logger: logger))
    }
}
