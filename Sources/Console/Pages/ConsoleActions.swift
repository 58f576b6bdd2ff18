import Entitlements
import Events
import Foundation
import Hummingbird
import Logging
import Rejections
import Store
import Toolkit

/// The console's operational pages and its actions (docs/console.md): each action is previewed on a page
/// of its own (with a dry run where there is one), confirmed by a posted form carrying the session's CSRF
/// token, taken only by an operator whose credential acts, and recorded (who, when, what, outcome) in the
/// store and on the audit topic.
struct ConsoleActions: Sendable {
    let pages: PageRenderer
    let store: EntitlementStore
    let operations: any ConsoleOperations
    let metrics: ConsoleMetrics
    let logger: Logger
    let now: @Sendable () -> Int64

    // MARK: Dead letters

    func deadLetters(_ request: Request, _ context: ConsoleRequestContext) async throws -> Response {
        let signedIn = try context.signedInOperator()
        let letters = try await operating { try await operations.deadLetters() }
        let row = { (letter: ConsoleDeadLetter) -> [String: Any] in
            ["position": letter.position, "time": letter.time, "type": letter.type, "subject": letter.subject,
             "error": String(letter.error.prefix(200)), "replays": letter.replays]
        }
        let waiting = letters.filter { $0.replays == 0 }.map(row), replayed = letters.filter { $0.replays > 0 }.map(row)
        return pages.page("deadLetters", title: "Dead letters", signedIn: signedIn, [
            "waiting": waiting, "hasWaiting": !waiting.isEmpty, "waitingCount": waiting.count,
            "replayed": replayed, "hasReplayed": !replayed.isEmpty,
        ])
    }

    func deadLetter(_ request: Request, _ context: ConsoleRequestContext) async throws -> Response {
        let signedIn = try context.signedInOperator()
        let position = try Self.position(context)
        let letters = try await operating { try await operations.deadLetters() }
        guard let letter = letters.first(where: { $0.position == position }) else {
            throw Rejection(ConsoleReason.notFound, "no dead letter at \(position)")
        }
        var values: [String: Any] = [
            "position": letter.position, "time": letter.time, "eventId": letter.eventId, "type": letter.type, "subject": letter.subject,
            "error": letter.error, "replays": letter.replays, "body": letter.body,
            "headers": letter.headers.map { ["name": $0.name, "value": $0.value] },
        ]
        if signedIn.canAct {
            values["preview"] = try await operating { try await operations.replayDeadLetter(at: position, dryRun: true) }.detail
        }
        return pages.page("deadLetter", title: "Dead letter", signedIn: signedIn, values)
    }

    func replayDeadLetter(_ request: Request, _ context: ConsoleRequestContext) async throws -> Response {
        let signedIn = try await postedBy(request, context)
        let position = try Self.position(context)
        return try await act(signedIn, action: "dead_letter.replay", target: position, heading: "Replay dead letter \(position)",
                             back: pages.base + "/dead-letters") {
            try await operations.replayDeadLetter(at: position, dryRun: false)
        }
    }

    // MARK: A purchase's refresh

    func confirmRefresh(_ request: Request, _ context: ConsoleRequestContext) async throws -> Response {
        let signedIn = try actingOperator(context)
        let id = try await Self.knownPurchase(context, store: store)
        return pages.page("confirm", title: "Refresh", signedIn: signedIn, [
            "heading": "Refresh purchase \(id) from its store",
            "description": "Tollgate reads this purchase from its store's API now (one call, from the app's share of the store's quota) and applies what changed, as a reported purchase is.",
            "action": pages.base + "/purchases/\(id)/refresh", "button": "Refresh now", "back": pages.base + "/purchases/\(id)",
        ])
    }

    func refresh(_ request: Request, _ context: ConsoleRequestContext) async throws -> Response {
        let signedIn = try await postedBy(request, context)
        let id = try await Self.knownPurchase(context, store: store)
        return try await act(signedIn, action: "purchase.refresh", target: id, heading: "Refresh purchase \(id)",
                             back: pages.base + "/purchases/\(id)") {
            try await operations.refreshPurchase(id)
        }
    }

    // MARK: Endpoints

    func endpoints(_ request: Request, _ context: ConsoleRequestContext) async throws -> Response {
        let signedIn = try context.signedInOperator()
        let endpoints = try await operating { try await operations.endpoints() }
        return pages.page("endpoints", title: "Endpoints", signedIn: signedIn, [
            "hasEndpoints": !endpoints.isEmpty,
            "endpoints": endpoints.map { ["name": $0.name, "kind": $0.kind, "origin": $0.origin, "state": $0.state, "enabled": $0.enabled,
                                          "pending": $0.pending, "parked": $0.parked, "hasParked": $0.parked > 0] as [String: Any] },
        ])
    }

    func confirmEndpoint(_ request: Request, _ context: ConsoleRequestContext, enable: Bool) async throws -> Response {
        let signedIn = try actingOperator(context)
        let name = try await knownEndpoint(context)
        let verb = enable ? "enable" : "disable"
        return pages.page("confirm", title: verb.capitalized, signedIn: signedIn, [
            "heading": "\(verb.capitalized) endpoint \(name)",
            "description": enable ? "Deliveries to \(name) resume from where they stopped, each lane's oldest waiting message first."
                                  : "Deliveries to \(name) stop; its messages wait until it is enabled again.",
            "action": pages.base + "/endpoints/\(name)/\(verb)", "button": "\(verb.capitalized) now", "back": pages.base + "/endpoints",
        ])
    }

    func setEndpoint(_ request: Request, _ context: ConsoleRequestContext, enable: Bool) async throws -> Response {
        let signedIn = try await postedBy(request, context)
        let name = try await knownEndpoint(context)
        return try await act(signedIn, action: enable ? "endpoint.enable" : "endpoint.disable", target: name,
                             heading: "\(enable ? "Enable" : "Disable") endpoint \(name)", back: pages.base + "/endpoints") {
            try await operations.setEndpoint(name, enabled: enable)
        }
    }

    func confirmEndpointReplay(_ request: Request, _ context: ConsoleRequestContext) async throws -> Response {
        let signedIn = try actingOperator(context)
        let name = try await knownEndpoint(context)
        let (scope, query) = try Self.replayScope(request)
        let preview = try await operating { try await operations.replayToEndpoint(name, scope, dryRun: true) }
        return pages.page("confirm", title: "Send again", signedIn: signedIn, [
            "heading": "Send \(scope.description) to \(name) again",
            "description": "Each of \(scope.description) that \(name) takes is delivered again, with its own id, from its first attempt, in its lane's order.",
            "preview": preview.detail,
            "action": pages.base + "/endpoints/\(name)/replay?\(query)", "button": "Send again now",
            "back": back(after: scope),
        ])
    }

    func endpointReplay(_ request: Request, _ context: ConsoleRequestContext) async throws -> Response {
        let signedIn = try await postedBy(request, context)
        let name = try await knownEndpoint(context)
        let (scope, _) = try Self.replayScope(request)
        return try await act(signedIn, action: "endpoint.replay", target: "\(name): \(scope.description)", heading: "Send again to \(name)",
                             back: back(after: scope)) {
            try await operations.replayToEndpoint(name, scope, dryRun: false)
        }
    }

    private func back(after scope: EndpointReplayScope) -> String {
        if case .purchase(let id) = scope { return pages.base + "/purchases/\(id)" }
        return pages.base + "/endpoints"
    }

    /// Which messages a replay sends: `?purchase=pur_...`, `?parked=1` or `?hours=1|24|168`; and the query naming it.
    private static func replayScope(_ request: Request) throws(Rejection) -> (EndpointReplayScope, String) {
        let query = request.uri.queryParameters
        if let id = query.get("purchase").map({ String($0) }) {
            guard PurchaseIds.isWellFormed(id) else { throw Rejection(ConsoleReason.invalidRequest, "name the purchase: ?purchase=pur_...") }
            return (.purchase(id), "purchase=\(id)")
        }
        if query.get("parked") == "1" { return (.parked, "parked=1") }
        if let hours = query.get("hours").flatMap({ Int(String($0)) }), [1, 24, 168].contains(hours) {
            return (.lastHours(hours), "hours=\(hours)")
        }
        throw Rejection(ConsoleReason.invalidRequest, "choose the messages: ?purchase=pur_..., ?parked=1 or ?hours=1, 24 or 168")
    }

    // MARK: Raw deliveries

    /// A delivery as the gateway wrote it to its raw topic: where and when it arrived, the events it carried
    /// and the purchases they touched, its kept headers and its body with every credential withheld.
    func rawDelivery(_ request: Request, _ context: ConsoleRequestContext) async throws -> Response {
        let signedIn = try context.signedInOperator()
        let (source, partition, offset) = try Self.rawPosition(context)
        let (indexed, purchases) = try await operating {
            let indexed = try await store.rawDeliveries(source: source, partition: partition, offset: offset)
            return (indexed, try await store.purchaseIds(ofEvents: indexed.map(\.eventId)))
        }
        // The record itself, from its topic: nil when retention removed it, unknown when the broker cannot answer now.
        let read: Result<ConsoleRawRecord?, any Error>
        do { read = .success(try await operations.rawRecord(source: source, partition: partition, offset: offset)) } catch { read = .failure(error) }
        let record = try? read.get()
        if indexed.isEmpty, case .success(nil) = read { throw Rejection(ConsoleReason.notFound, "no delivery of \(source) at \(partition):\(offset)") }
        let first = indexed.first
        var values: [String: Any] = [
            "source": source, "position": "\(partition):\(offset)",
            "receivedAt": first?.receivedAt ?? record?.headers.first { $0.name == RawRecordHeaders.receivedAt }?.value ?? "",
            "bytes": first?.bodyBytes ?? Int64(record?.body.count ?? 0),
            "events": indexed.map { delivery -> [String: Any] in
                ["eventId": EventRedaction.eventId(delivery.eventId, source: source, ids: store.purchaseIds),
                 "purchases": purchases.filter { $0.eventId.isExactly(delivery.eventId) }.map { ["href": pages.base + "/purchases/" + $0.purchaseId, "id": $0.purchaseId] }]
            },
            "hasEvents": !indexed.isEmpty,
        ]
        if let path = first?.path { values["path"] = path }
        if let scope = first?.scope { values["scope"] = scope }
        switch read {
        case .success(let record?):
            values["headers"] = record.headers.map { header -> [String: String] in
                let name = header.name.hasPrefix("http_") ? String(header.name.dropFirst(5)) : header.name
                // A Google event's subject is its purchase token.
                let token = source == EventRedaction.tokenSender && header.name == CloudEventHeaders.subject
                return ["name": header.name, "value": DeliveryRedaction.withholds(name) || token ? DeliveryRedaction.withheld : header.value]
            }
            values["body"] = DeliveryRedaction.pretty(record.body)
        // What the index kept of the body, when the topic cannot give it.
        case .success(nil):
            values["gone"] = true
            if let body = first?.bodyShown { values["body"] = body }
        case .failure:
            values["unreadable"] = true
            if let body = first?.bodyShown { values["body"] = body }
        }
        if signedIn.canAct, record != nil {
            // The page stands without its dry run: an operator can still read the delivery.
            values["preview"] = (try? await operations.reverify(source: source, partition: partition, offset: offset, dryRun: true))?.detail
                ?? "unavailable now (the broker or the store did not answer); the delivery can still be verified again"
        }
        return pages.page("rawDelivery", title: "Delivery", signedIn: signedIn, values)
    }

    func reverify(_ request: Request, _ context: ConsoleRequestContext) async throws -> Response {
        let signedIn = try await postedBy(request, context)
        let (source, partition, offset) = try Self.rawPosition(context)
        return try await act(signedIn, action: "delivery.reverify", target: "\(source) \(partition):\(offset)",
                             heading: "Verify again \(source) \(partition):\(offset)",
                             back: pages.base + "/deliveries/\(source)/\(partition):\(offset)") {
            try await operations.reverify(source: source, partition: partition, offset: offset, dryRun: false)
        }
    }

    /// A raw delivery's sender and `partition:offset` from the path.
    private static func rawPosition(_ context: ConsoleRequestContext) throws(Rejection) -> (String, Int32, Int64) {
        let position = try Self.position(context)
        let parts = position.split(separator: ":")
        guard let source = context.parameters.get("source"), !source.isEmpty, source.utf8.count <= 40,
              source.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") }),
              parts.count == 2, let partition = Int32(parts[0]), let offset = Int64(parts[1]) else {
            throw Rejection(ConsoleReason.notFound, "name a delivery by its sender and partition:offset")
        }
        return (source, partition, offset)
    }

    // MARK: Audit

    func audit(_ request: Request, _ context: ConsoleRequestContext) async throws -> Response {
        let signedIn = try context.signedInOperator()
        let entries = try await operating { try await store.audit() }
        return pages.page("audit", title: "Audit", signedIn: signedIn, [
            "hasEntries": !entries.isEmpty,
            "entries": entries.map { ["sequence": $0.sequence, "at": ConsolePages.time($0.atMs), "operatorName": $0.operatorName,
                                      "action": $0.action, "target": $0.target, "outcome": $0.outcome, "detail": $0.detail] as [String: Any] },
        ])
    }

    // MARK: The one way an action is taken

    /// Who posted an action: the session's CSRF token and an operator who acts, checked before anything
    /// the post names is looked at.
    private func postedBy(_ request: Request, _ context: ConsoleRequestContext) async throws(Rejection) -> ConsoleOperator {
        let signedIn = try context.signedInOperator()
        let form = try await ConsolePages.form(request)
        try OperatorSessions.checkCSRF(form["csrf"], for: signedIn)
        guard signedIn.canAct else { throw Self.readOnly }
        return signedIn
    }

    /// An action `postedBy` admitted: `perform`, recorded in the store's audit before and after, and on the audit topic.
    private func act(_ signedIn: ConsoleOperator, action: String, target: String, heading: String, back: String,
                     _ perform: () async throws -> ActionOutcome) async throws -> Response {
        // Recorded before it is taken: whatever happens next, the audit shows who started what.
        var entry = try await operating {
            try await store.recordAudit(AuditEntry(atMs: now(), operatorName: signedIn.name, action: action, target: target,
                                                   outcome: "started", detail: ""))
        }
        let outcome: ActionOutcome
        do {
            outcome = try await perform()
        } catch let refusal as Rejection {
            outcome = ActionOutcome("refused", refusal.message)
        } catch {
            // The cause goes to the log, not the page: it may name internals.
            logger.error("console action failed", metadata: ["action": .string(action), "error": .string("\(error)")])
            outcome = ActionOutcome("failed", "the action failed; the workers' log says why")
        }
        metrics.action(action, outcome: outcome.outcome)
        entry.outcome = outcome.outcome
        entry.detail = outcome.detail
        do {
            try await store.completeAudit(entry)
        } catch {
            logger.error("audit outcome not kept; the audit shows the action as started", metadata: [
                "sequence": .stringConvertible(entry.sequence), "outcome": .string(outcome.outcome), "error": .string("\(error)")])
        }
        do {
            try await operations.publishAudit(entry)
        } catch {
            metrics.auditPublishFailed()
            logger.error("audit record not published; it is in the store", metadata: ["sequence": .stringConvertible(entry.sequence),
                                                                                     "error": .string("\(error)")])
        }
        logger.notice("console action", metadata: ["operator": .string(signedIn.name), "action": .string(action),
                                                   "outcome": .string(outcome.outcome), "audit": .stringConvertible(entry.sequence)])
        return pages.page("result", title: heading, signedIn: signedIn, [
            "heading": heading, "outcome": outcome.outcome, "detail": outcome.detail, "sequence": entry.sequence, "back": back,
        ])
    }

    static let readOnly = Rejection(ConsoleReason.actionNotAllowed, "this operator credential reads only (actions: false)")

    private func actingOperator(_ context: ConsoleRequestContext) throws(Rejection) -> ConsoleOperator {
        let signedIn = try context.signedInOperator()
        guard signedIn.canAct else { throw Self.readOnly }
        return signedIn
    }

    private static func position(_ context: ConsoleRequestContext) throws(Rejection) -> String {
        guard let position = context.parameters.get("position"), position.utf8.count <= 40,
              position.split(separator: ":").count == 2, position.allSatisfy({ $0.isASCII && ($0.isNumber || $0 == ":") }) else {
            throw Rejection(ConsoleReason.notFound, "name a record by partition:offset")
        }
        return position
    }

    private static func knownPurchase(_ context: ConsoleRequestContext, store: EntitlementStore) async throws(Rejection) -> String {
        guard let id = context.parameters.get("purchase"), PurchaseIds.isWellFormed(id) else {
            throw Rejection(ConsoleReason.notFound, "no such purchase")
        }
        let found: Purchase?
        do { found = try await store.purchase(id: id) } catch {
            throw Rejection(ConsoleReason.storeUnavailable, "the store cannot answer now; try again shortly", retryAfterSeconds: 5)
        }
        guard found != nil else { throw Rejection(ConsoleReason.notFound, "no such purchase") }
        return id
    }

    private func knownEndpoint(_ context: ConsoleRequestContext) async throws -> String {
        let name = context.parameters.get("endpoint") ?? ""
        let endpoints = try await operating { try await operations.endpoints() }
        guard endpoints.contains(where: { $0.name == name }) else { throw Rejection(ConsoleReason.notFound, "no endpoint named so") }
        return name
    }

    /// The operation's answer, or 503 when what it reads cannot answer now.
    private func operating<T>(_ read: () async throws -> T) async throws(Rejection) -> T {
        do { return try await read() } catch let refusal as Rejection { throw refusal } catch {
            logger.warning("console page could not read", metadata: ["error": .string("\(error)")])
            throw Rejection(ConsoleReason.storeUnavailable, "the store or the broker cannot answer now; try again shortly", retryAfterSeconds: 5)
        }
    }
}
