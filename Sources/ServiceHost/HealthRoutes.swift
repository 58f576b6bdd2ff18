import HTTPTypes
import Hummingbird
import NIOCore

/// What `/readyz` answers: the status follows `ready`, the body is the JSON object given.
public struct ReadinessAnswer: Sendable {
    public var ready: Bool
    public var json: String

    public init(ready: Bool, json: String) {
        self.ready = ready
        self.json = json
    }
}

/// `/healthz`, `/readyz` and `/metrics`, the same on the gateway's port and the workers': liveness
/// (the process answers), readiness (the process's own check) and the Prometheus exposition.
public struct HealthRoutes: Sendable {
    /// The methods each path answers; anything else is a 405 where the server says so.
    public static let methods: [String: [HTTPRequest.Method]] = ["/healthz": [.get, .head], "/readyz": [.get, .head], "/metrics": [.get]]

    /// `methods` without `/metrics` when it is served on a port of its own (`MetricsServer`).
    public static func methods(servingMetrics: Bool) -> [String: [HTTPRequest.Method]] {
        servingMetrics ? methods : methods.filter { $0.key != "/metrics" }
    }

    let readiness: @Sendable () async -> ReadinessAnswer
    /// Nil when `/metrics` is served elsewhere (`metrics.port`): the path is then unknown here (404).
    let exposition: (@Sendable () -> String)?

    /// `readiness` runs on every GET or HEAD of `/readyz`; `exposition` on every GET of `/metrics`.
    public init(readiness: @escaping @Sendable () async -> ReadinessAnswer, exposition: (@Sendable () -> String)?) {
        self.readiness = readiness
        self.exposition = exposition
    }

    public func register<Context: RequestContext>(on router: Router<Context>) {
        router.get("/healthz") { _, _ in Self.json(.ok, #"{"status":"ok"}"#) }
        router.head("/healthz") { _, _ in Response(status: .ok) }
        router.get("/readyz") { [readiness] _, _ in
            let answer = await readiness()
            return Self.json(answer.ready ? .ok : .serviceUnavailable, answer.json)
        }
        router.head("/readyz") { [readiness] _, _ in Response(status: await readiness().ready ? .ok : .serviceUnavailable) }
        if let exposition { Self.registerMetrics(exposition, on: router) }
    }

    static func registerMetrics<Context: RequestContext>(_ exposition: @escaping @Sendable () -> String, on router: Router<Context>) {
        router.get("/metrics") { _, _ in
            var headers = HTTPFields()
            headers[.contentType] = "text/plain; version=0.0.4; charset=utf-8"
            return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(string: exposition())))
        }
    }

    static func json(_ status: HTTPResponse.Status, _ text: String) -> Response {
        var headers = HTTPFields()
        headers[.contentType] = "application/json"
        return Response(status: status, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(string: text)))
    }
}
