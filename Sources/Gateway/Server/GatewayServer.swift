import Config
import Events
import Foundation
import HTTPTypes
import Hummingbird
import Kafka
import Logging
import NIOCore
import ServiceHost
import Verifiers

/// Builds the gateway's HTTP application: one route per sender plus `/healthz`, `/readyz`, `/metrics` (`HealthRoutes`).
public struct GatewayServer: Sendable {
    public let settings: HTTPSettings
    public let registry: SourceRegistry
    public let writer: DeliveryWriter
    public let metrics: GatewayMetrics
    public let readiness: Readiness
    public let logger: Logger
    public let limits: LimitSettings
    /// Routes served beside the webhooks, e.g. the entitlement API in `tollgate dev`.
    let additionalRoutes: RouteGroup
    /// False when `/metrics` has a listener of its own (`metrics.port`): the public port then knows no such path.
    let servesMetrics: Bool

    public init(settings: HTTPSettings, registry: SourceRegistry, writer: DeliveryWriter, readiness: Readiness,
                metrics: GatewayMetrics = GatewayMetrics(), logger: Logger, limits: LimitSettings = LimitSettings(),
                additionalRoutes: RouteGroup = .none, servesMetrics: Bool = true) {
        self.servesMetrics = servesMetrics
        self.limits = limits
        self.additionalRoutes = additionalRoutes
        self.settings = settings
        self.registry = registry
        self.writer = writer
        self.metrics = metrics
        self.readiness = readiness
        self.logger = logger
    }

    public static func webhookPath(_ source: SourceName) -> String { WebhookRoutes.path(source) }


    public func makeRouter() -> Router<BasicRequestContext> {
        let router = Router(context: BasicRequestContext.self)
        var routes = HealthRoutes.methods(servingMetrics: servesMetrics).merging(additionalRoutes.methods) { first, _ in first }
        let webhooks = WebhookRoutes(registry)
        for path in webhooks.paths { routes[path] = [.post] }
        for path in webhooks.accountPaths { routes[path + "/:account"] = [.post] }
        router.add(middleware: MetricsMiddleware(metrics: metrics))
        router.add(middleware: ProtocolErrorMiddleware(methods: routes) { [metrics] path, reason in
            metrics.rejection(source: webhooks.sourceLabel(path: path), reason: reason.rawValue)
        })

        let allSenders = InFlightLimiter(limit: limits.maxInFlight)
        for sender in registry.senders {
            let name = sender.source.name
            let admission = SourceAdmission(source: name, allSenders: allSenders, limits: limits, metrics: metrics, logger: logger)
            let handler = WebhookHandler(name: name, source: sender.source, writer: writer, metrics: metrics,
                                         maxBodyBytes: settings.maxBodyBytes, publicPathPrefix: settings.publicPathPrefix,
                                         logger: logger, admission: admission)
            router.post(RouterPath(Self.webhookPath(name))) { request, _ in await handler.handle(request) }
            if sender.routesAccounts {
                router.post(RouterPath(Self.webhookPath(name) + "/:account")) { request, _ in await handler.handle(request) }
            }
        }
        HealthRoutes(readiness: { [readiness, metrics, writer] in
            let report = await readiness.check()
            metrics.durabilityState(spool: report.spool, kafkaReachable: report.kafkaReachable)
            metrics.embeddedBrokerState(writer.producer.config.client.mockLogGuard)
            return ReadinessAnswer(ready: report.ready, json: Self.readinessJSON(report))
        }, exposition: servesMetrics ? exposition : nil).register(on: router)
        additionalRoutes.register(on: router)
        return router
    }

    /// The Prometheus exposition, the spool's and the embedded broker's gauges brought up to date first.
    public func exposition() -> String {
        metrics.durabilityState(spool: writer.spool?.stats, kafkaReachable: nil)
        metrics.embeddedBrokerState(writer.producer.config.client.mockLogGuard)
        metrics.silenceState(nowSeconds: Double(Timestamp.now.millisecondsSince1970) / 1000)
        return metrics.exposition()
    }

    /// The HTTP application as a `Service`; `onListening` receives the bound port (useful with port 0).
    public func makeApplication(onListening: @escaping @Sendable (Int) async -> Void = { _ in }) -> some ApplicationProtocol {
        Application(
            router: makeRouter(),
            server: .http1(configuration: http1Configuration()),
            configuration: applicationConfiguration(),
            onServerRunning: { channel in await onListening(channel.localAddress?.port ?? settings.port) },
            logger: logger)
    }

    static func readinessJSON(_ report: ReadinessReport) -> String {
        var text = #"{"ready":\#(report.ready),"detail":\#(jsonString(report.detail))"#
        if let reachable = report.kafkaReachable { text += #","kafka":"\#(reachable ? "reachable" : "unreachable")""# }
        if let spool = report.spool {
            let age = (spool.oldestAgeSeconds() * 1_000).rounded() / 1_000
            text += #","spool":{"records":\#(spool.records),"bytes":\#(spool.bytes),"maxBytes":\#(spool.maxBytes),"oldestAgeSeconds":\#(age)}"#
        }
        return text + "}"
    }

    /// A JSON string literal: details may quote what a sender's check said.
    static func jsonString(_ text: String) -> String {
        let data = (try? JSONSerialization.data(withJSONObject: [text], options: [.withoutEscapingSlashes])) ?? Data("[\"\"]".utf8)
        return String(decoding: data.dropFirst().dropLast(), as: UTF8.self)
    }
}
