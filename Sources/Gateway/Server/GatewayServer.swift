import Config
import Events
import Foundation
import HTTPTypes
import Hummingbird
import Kafka
import Logging
import NIOCore
import Senders

/// Builds the gateway's HTTP application: one route per sender plus `/healthz`, `/readyz`, `/metrics`.
public struct GatewayServer: Sendable {
    public let settings: HTTPSettings
    public let registry: SourceRegistry
    public let writer: DeliveryWriter
    public let metrics: GatewayMetrics
    public let readiness: Readiness
    public let logger: Logger
    public let limits: LimitSettings
    /// Routes served beside the webhooks, e.g. the entitlement API in `tollgate dev`.
    let additionalRoutes: @Sendable (Router<BasicRequestContext>) -> Void

    public init(settings: HTTPSettings, registry: SourceRegistry, writer: DeliveryWriter,
                metrics: GatewayMetrics = GatewayMetrics(), logger: Logger, limits: LimitSettings = LimitSettings(),
                additionalRoutes: @escaping @Sendable (Router<BasicRequestContext>) -> Void = { _ in }) {
        self.limits = limits
        self.additionalRoutes = additionalRoutes
        self.settings = settings
        self.registry = registry
        self.writer = writer
        self.metrics = metrics
        // A delivery's records take about twice its body in the spool (raw body, events, base64).
        self.readiness = Readiness(producer: writer.producer, spool: writer.spool, spoolReserve: 2 * settings.maxBodyBytes,
                                   registry: registry)
        self.logger = logger
    }

    public static func webhookPath(_ source: SourceName) -> String { WebhookRoutes.path(source) }

    /// Health, readiness and metrics, with the methods each answers (others get 405).
    public static let operationalRoutes: [String: [HTTPRequest.Method]] = ["/healthz": [.get, .head], "/readyz": [.get, .head], "/metrics": [.get]]

    public func makeRouter() -> Router<BasicRequestContext> {
        let router = Router(context: BasicRequestContext.self)
        var routes = Self.operationalRoutes
        let webhooks = WebhookRoutes(registry)
        for path in webhooks.paths { routes[path] = [.post] }
        router.add(middleware: MetricsMiddleware(metrics: metrics))
        router.add(middleware: ProtocolErrorMiddleware(routes: routes, webhooks: webhooks, metrics: metrics))

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
        router.get("/healthz") { _, _ in Self.json(.ok, #"{"status":"ok"}"#) }
        router.head("/healthz") { _, _ in Response(status: .ok) }
        router.get("/readyz") { [readiness, metrics] _, _ in
            let report = await readiness.check()
            metrics.durabilityState(spool: report.spool, kafkaReachable: report.kafkaReachable)
            return Self.json(report.ready ? .ok : .serviceUnavailable, Self.readinessJSON(report))
        }
        router.head("/readyz") { [readiness] _, _ in Response(status: await readiness.check().ready ? .ok : .serviceUnavailable) }
        router.get("/metrics") { [metrics, writer] _, _ in
            metrics.durabilityState(spool: writer.spool?.stats, kafkaReachable: nil)
            var headers = HTTPFields()
            headers[.contentType] = "text/plain; version=0.0.4; charset=utf-8"
            return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(string: metrics.exposition())))
        }
        additionalRoutes(router)
        return router
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

    static func json(_ status: HTTPResponse.Status, _ text: String) -> Response {
        var headers = HTTPFields()
        headers[.contentType] = "application/json"
        return Response(status: status, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(string: text)))
    }
}
