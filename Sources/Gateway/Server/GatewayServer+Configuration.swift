import Hummingbird
import HummingbirdCore
import Logging
import NIOCore

extension GatewayServer {
    /// The listening socket; past `limits.maxConnections` open connections new ones wait in the backlog.
    func applicationConfiguration() -> ApplicationConfiguration {
        ApplicationConfiguration(address: .hostname(settings.host, port: settings.port), serverName: "tollgate",
                                 availableConnectionsDelegate: MaximumAvailableConnections(limits.maxConnections, logger: logger))
    }

    /// HTTP/1 with the parser's head limits from `http.maxHeaderBytes`/`maxHeaderCount` and a
    /// `ConnectionGuard` per connection for head and body deadlines and JSON answers to bad heads.
    func http1Configuration() -> HTTP1Channel.Configuration {
        let guardSettings = ConnectionGuard.Settings(
            headerTimeout: .milliseconds(Int64(settings.headerTimeoutMs)),
            bodyTimeout: .milliseconds(Int64(settings.bodyTimeoutMs)),
            routes: WebhookRoutes(registry))
        let decoder = HTTP1Channel.Configuration.DecoderConfiguration(
            maxHeaderFieldSize: settings.maxHeaderBytes, maxHeaderListSize: settings.maxHeaderBytes,
            maxHeaderFieldCount: settings.maxHeaderCount)
        return HTTP1Channel.Configuration(
            additionalChannelHandlers: [ConnectionGuard(settings: guardSettings, metrics: metrics, logger: logger)],
            idleTimeout: .milliseconds(Int64(settings.idleTimeoutMs)),
            httpDecoderConfiguration: decoder)
    }

    /// What the limits imply, once at start-up: bodies are held whole while a request is handled,
    /// so `maxInFlight × maxBodyBytes` bounds their memory, and open connections bound head buffers.
    public func logLimits() {
        let mebibyte = 1_048_576
        logger.info("gateway limits", metadata: [
            "maxInFlight": .stringConvertible(limits.maxInFlight),
            "maxInFlightPerSource": .stringConvertible(limits.maxInFlightPerSource),
            "bodyMemoryBoundMiB": .stringConvertible(limits.maxInFlight * settings.maxBodyBytes / mebibyte),
            "maxConnections": .stringConvertible(limits.maxConnections),
            "headMemoryBoundMiB": .stringConvertible(limits.maxConnections * settings.maxHeaderBytes / mebibyte),
            "rates": .string(limits.rates.keys.map(\.rawValue).sorted().joined(separator: ",")),
        ])
    }
}
