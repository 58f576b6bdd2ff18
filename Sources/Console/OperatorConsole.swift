import Config
import Entitlements
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import Rejections
import ServiceHost
import Store
import Toolkit

/// What the console is made of before the workers give it their operations: its settings, its operators
/// and its templates, parsed once.
public struct ConsoleSetup: Sendable {
    let settings: ConsoleSettings
    let operators: [APIToken]
    let pages: PageRenderer
    /// Where the overview reads the gateway's and the workers' numbers (`console.gatewayMetrics`, this process's registry).
    public var metricsSources: [MetricsSource] = []

    /// Nil when no operator credential is configured: then there is no console (and no purchase history).
    public static func make(settings: ConsoleSettings, operators: [APIToken]) throws -> ConsoleSetup? {
        let operators = operators.filter { $0.kind == .operator }
        guard !operators.isEmpty else { return nil }
        return ConsoleSetup(settings: settings, operators: operators, pages: try PageRenderer(base: settings.path), metricsSources: [])
    }
}

/// The operator console (docs/console.md): server-rendered pages at `console.path`, for operators signed
/// in with an operator credential of `api.tokens`. Composed by the workers (`tollgate work` serves it on
/// `api.port`, `tollgate dev` on the gateway's port), with the history pruning its purchase pages read.
public struct OperatorConsole: Sendable {
    public let routes: RouteGroup
    /// Deletes purchase history older than `console.historyDays`.
    public let historyPruning: PeriodicJob
    /// Samples the overview's numbers from `/metrics` once a minute (nil: no source to read).
    public let metricsSampling: PeriodicJob?

    public init(setup: ConsoleSetup, store: EntitlementStore, operations: any ConsoleOperations, metrics: ConsoleMetrics, logger: Logger,
                now: @escaping @Sendable () -> Int64 = { Int64(Date().timeIntervalSince1970 * 1_000) }) {
        let settings = setup.settings, operators = setup.operators, pages = setup.pages
        let base = settings.path
        let keys = SessionKeys(store: store) { key in
            OperatorSessions(operators: operators, key: key, lifetimeMinutes: settings.sessionMinutes, cookiePath: base, now: now)
        }
        let numbers = ServiceNumbers(sources: setup.metricsSources)
        let handlers = ConsolePages(pages: pages, store: store, operations: operations, numbers: numbers, now: now)
        let actions = ConsoleActions(pages: pages, store: store, operations: operations, metrics: metrics, logger: logger, now: now)
        let refusals = RejectionMiddleware<ConsoleRequestContext> { rejection, _ in
            metrics.rejected(reason: rejection.code)
            logger.info("console request refused", metadata: ["reason": .string(rejection.code)])
            return pages.refusal(rejection, signedIn: nil)
        }
        let headers = ConsoleHeadersMiddleware<ConsoleRequestContext>()
        typealias Route = RouteGroup.Route<ConsoleRequestContext>
        let open = RouteGroup(context: ConsoleRequestContext.self, middleware: [headers, refusals], [
            Route(.get, base + "/sign-in") { _, _ in pages.page("signIn", title: "Sign in", signedIn: nil) },
            Route(.post, base + "/sign-in") { request, _ in
                let form = try await ConsolePages.form(request)
                do throws(Rejection) {
                    let (_, cookie) = try await keys.sessions().signIn(credential: form["credential"] ?? "")
                    metrics.signIn(outcome: "signed_in")
                    return pages.redirect(to: base, cookie: try await keys.sessions().setCookie(cookie))
                } catch where error.is(ConsoleReason.invalidCredential) {
                    metrics.signIn(outcome: "refused")
                    metrics.rejected(reason: error.code)
                    return pages.page("signIn", title: "Sign in", signedIn: nil, status: .unauthorized, ["message": error.message])
                }
            },
            Route(.get, base + "/style.css") { _, _ in
                var headers = HTTPFields()
                headers[.contentType] = "text/css; charset=utf-8"
                headers[.cacheControl] = "max-age=3600"
                return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(string: Templates.stylesheet)))
            },
        ])
        let signedIn = RouteGroup(context: ConsoleRequestContext.self,
                                  middleware: [headers, refusals, SessionMiddleware(keys: keys, signInPath: base + "/sign-in")], [
            Route(.get, base) { request, context in try await handlers.overview(request, context) },
            Route(.get, base + "/purchases") { request, context in try await handlers.lists(request, context, entitlements: false) },
            Route(.get, base + "/entitlements") { request, context in try await handlers.lists(request, context, entitlements: true) },
            Route(.get, base + "/senders/:source") { request, context in try await handlers.sender(request, context) },
            Route(.get, base + "/search") { request, context in try await handlers.search(request, context) },
            Route(.get, base + "/user") { request, context in try await handlers.user(request, context) },
            Route(.get, base + "/purchases/:purchase") { request, context in try await handlers.purchase(request, context) },
            Route(.get, base + "/purchases/:purchase/refresh") { request, context in try await actions.confirmRefresh(request, context) },
            Route(.post, base + "/purchases/:purchase/refresh") { request, context in try await actions.refresh(request, context) },
            Route(.get, base + "/dead-letters") { request, context in try await actions.deadLetters(request, context) },
            Route(.get, base + "/dead-letters/:position") { request, context in try await actions.deadLetter(request, context) },
            Route(.post, base + "/dead-letters/:position/replay") { request, context in try await actions.replayDeadLetter(request, context) },
            Route(.get, base + "/endpoints") { request, context in try await actions.endpoints(request, context) },
            Route(.get, base + "/endpoints/:endpoint/enable") { request, context in try await actions.confirmEndpoint(request, context, enable: true) },
            Route(.post, base + "/endpoints/:endpoint/enable") { request, context in try await actions.setEndpoint(request, context, enable: true) },
            Route(.get, base + "/endpoints/:endpoint/disable") { request, context in try await actions.confirmEndpoint(request, context, enable: false) },
            Route(.post, base + "/endpoints/:endpoint/disable") { request, context in try await actions.setEndpoint(request, context, enable: false) },
            Route(.get, base + "/endpoints/:endpoint/replay") { request, context in try await actions.confirmEndpointReplay(request, context) },
            Route(.post, base + "/endpoints/:endpoint/replay") { request, context in try await actions.endpointReplay(request, context) },
            Route(.get, base + "/deliveries/:source/:position") { request, context in try await actions.rawDelivery(request, context) },
            Route(.post, base + "/deliveries/:source/:position/reverify") { request, context in try await actions.reverify(request, context) },
            Route(.get, base + "/audit") { request, context in try await actions.audit(request, context) },
            Route(.post, base + "/sign-out") { request, context in
                let form = try await ConsolePages.form(request)
                try OperatorSessions.checkCSRF(form["csrf"], for: try context.signedInOperator())
                return pages.redirect(to: base + "/sign-in", cookie: try await keys.sessions().clearCookie())
            },
        ])
        routes = RouteGroup.combined([open, signedIn])
        let retentionMs = Int64(settings.historyDays) * 86_400_000
        historyPruning = PeriodicJob(name: "purchase history pruning", interval: .seconds(600), logger: logger) {
            let pruned = try await store.pruneHistory(beforeMs: now() - retentionMs)
            let deliveries = try await store.pruneRawDeliveries(beforeMs: now() - retentionMs)
            let calls = try await store.pruneStoreCalls(beforeMs: now() - retentionMs)
            if pruned + deliveries + calls > 0 { metrics.historyPruned(pruned + deliveries + calls) }
            return max(pruned, deliveries, calls) >= 5_000 ? .moreWaiting : .idle
        }
        metricsSampling = numbers.isEmpty ? nil : PeriodicJob(name: "console metrics sampling", interval: .seconds(60), logger: logger) {
            for source in await numbers.sample(nowMs: now()) { metrics.metricsReadFailed(source: source) }
            return .idle
        }
    }
}
