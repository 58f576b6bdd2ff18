import Entitlements
import Events
import Foundation
import Hummingbird
import Rejections
import ServiceHost
import Store
import Toolkit

/// What each page reads and shows (docs/console.md says what each answers).
struct ConsolePages: Sendable {
    let pages: PageRenderer
    let store: EntitlementStore
    let operations: any ConsoleOperations
    let numbers: ServiceNumbers
    let now: @Sendable () -> Int64

    /// A posted form (`application/x-www-form-urlencoded`), at most 8 KiB.
    static func form(_ request: Request) async throws(Rejection) -> [String: String] {
        let body = try await RequestBodyReader.read(request, maxBytes: 8_192)
        guard let form = FormBody(body) else { throw Rejection(ConsoleReason.invalidRequest, "the form could not be read") }
        return form.values
    }

    func overview(_ request: Request, _ context: ConsoleRequestContext) async throws -> Response {
        let signedIn = try context.signedInOperator()
        let nowMs = now()
        let (totals, hour, day) = try await reading {
            (try await store.totals(), try await store.historyCounts(sinceMs: nowMs - 3_600_000),
             try await store.historyCounts(sinceMs: nowMs - 86_400_000))
        }
        // What the broker and the endpoints hold: a number each, "?" when it cannot be read now.
        let deadLetters = try? await operations.deadLetters()
        let endpoints = try? await operations.endpoints()
        return pages.page("overview", title: "Overview", signedIn: signedIn, [
            "purchases": totals.purchases, "activeEntitlements": totals.activeEntitlements,
            "deadLettersWaiting": deadLetters.map { String($0.filter { $0.replays == 0 }.count) } ?? "?",
            "outboundWaiting": endpoints.map { String($0.reduce(0) { $0 + $1.pending }) } ?? "?",
            "outboundParked": endpoints.map { String($0.reduce(0) { $0 + $1.parked }) } ?? "?",
            "windows": [Self.window("hour", hour), Self.window("day", day)],
        ].merging(await serviceNumbers(nowMs: nowMs)) { first, _ in first })
    }

    /// The gateway's and the consumers' numbers, from `/metrics` (`ServiceNumbers`): per sender the deliveries
    /// accepted and refused over the hour and the day, and its silence; the spool; the consumers' lag.
    private func serviceNumbers(nowMs: Int64) async -> [String: Any] {
        guard !numbers.isEmpty else { return [:] }
        let current = await numbers.current(nowMs: nowMs)
        let hour = numbers.window(3_600_000, current: current), day = numbers.window(86_400_000, current: current)
        let state = ServiceNumbers.now(current)
        let senders = Set(hour.accepted.keys).union(day.accepted.keys).union(day.rejected.keys).union(state.silence.keys)
            .union(state.silenceThreshold.keys).sorted()
        let largest = max(1, senders.map { (day.accepted[$0] ?? 0) + (day.rejected[$0]?.values.reduce(0, +) ?? 0) }.max() ?? 1)
        let rows: [[String: Any]] = senders.map { sender in
            let accepted = day.accepted[sender] ?? 0, rejected = day.rejected[sender]?.values.reduce(0, +) ?? 0
            var row: [String: Any] = [
                "source": sender, "href": pages.base + "/senders/" + sender,
                "acceptedHour": Self.count(hour.accepted[sender]), "acceptedDay": Self.count(accepted),
                "rejectedHour": Self.count(hour.rejected[sender]?.values.reduce(0, +)), "rejectedDay": Self.count(rejected),
                "acceptedWidth": Int(accepted * 100 / largest), "rejectedWidth": Int(rejected * 100 / largest),
            ]
            row["silence"] = Self.silence(state.silence[sender], threshold: state.silenceThreshold[sender])
            if let threshold = state.silenceThreshold[sender], threshold > 0, let silent = state.silence[sender], silent > threshold {
                row["silent"] = true
            }
            return row
        }
        var values: [String: Any] = [
            "hasServiceNumbers": true, "senderRows": rows, "hasSenderRows": !rows.isEmpty,
            "sourcesRead": current.series.count, "sourcesConfigured": numbers.sources.count,
            "lag": state.lag.keys.sorted().map { ["topic": $0, "records": Self.count(state.lag[$0])] },
            "hasLag": !state.lag.isEmpty,
        ]
        if !day.complete { values["sampledSince"] = Self.time(day.sinceMs) }
        if let records = state.spoolRecords {
            values["spool"] = "\(Self.count(records)) records" + (state.spoolOldestAge.map { $0 > 0 ? ", the oldest \(Self.duration($0)) old" : "" } ?? "")
        }
        let unreachable = state.kafkaReachable.filter { $0.value < 1 }.keys.sorted()
        if !unreachable.isEmpty { values["kafkaUnreachable"] = unreachable.joined(separator: ", ") }
        return values
    }

    /// One sender's deliveries accepted and refused by reason, over the hour and the day.
    func sender(_ request: Request, _ context: ConsoleRequestContext) async throws -> Response {
        let signedIn = try context.signedInOperator()
        guard let sender = context.parameters.get("source"), !sender.isEmpty, sender.utf8.count <= 40,
              sender.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") }) else {
            throw Rejection(ConsoleReason.notFound, "no such sender")
        }
        let nowMs = now()
        let current = await numbers.current(nowMs: nowMs)
        let hour = numbers.window(3_600_000, current: current), day = numbers.window(86_400_000, current: current)
        let state = ServiceNumbers.now(current)
        let reasons = Set(day.rejected[sender]?.keys.map { $0 } ?? []).union(hour.rejected[sender]?.keys.map { $0 } ?? []).sorted()
        var values: [String: Any] = [
            "source": sender, "acceptedHour": Self.count(hour.accepted[sender]), "acceptedDay": Self.count(day.accepted[sender]),
            "reasons": reasons.map { ["reason": $0, "hour": Self.count(hour.rejected[sender]?[$0]), "day": Self.count(day.rejected[sender]?[$0])] },
            "hasReasons": !reasons.isEmpty,
            "silence": Self.silence(state.silence[sender], threshold: state.silenceThreshold[sender]),
        ]
        if !day.complete { values["sampledSince"] = Self.time(day.sinceMs) }
        return pages.page("sender", title: sender, signedIn: signedIn, values)
    }

    /// A count as a page shows it: whole, at least 0, at most 2^53 (what `ServiceNumbers` reads).
    static func count(_ value: Double?) -> String {
        let clamped = min(max((value ?? 0).rounded(), 0), ServiceNumbers.largestValue)
        return clamped.isFinite ? String(Int64(clamped)) : "0"
    }

    static func duration(_ seconds: Double) -> String {
        let s = Int64(min(max(seconds.isFinite ? seconds : 0, 0), ServiceNumbers.largestValue))
        if s < 120 { return "\(s) s" }
        if s < 7_200 { return "\(s / 60) min" }
        if s < 172_800 { return "\(s / 3_600) h" }
        return "\(s / 86_400) days"
    }

    /// The sender's silence: since its last authentic delivery, or the gateway's start when none came.
    static func silence(_ silent: Double?, threshold: Double?) -> String {
        guard let silent else { return "not watched" }
        var text = "silent for \(duration(silent))"
        if let threshold, threshold > 0 {
            text += silent > threshold ? ", past its \(duration(threshold)) silence threshold" : " (threshold \(duration(threshold)))"
        }
        return text
    }

    /// One window's rows: per sender, applied and unchanged, with the bar widths of a chart drawn here.
    private static func window(_ label: String, _ counts: [(source: String, outcome: String, count: Int64)]) -> [String: Any] {
        var bySource: [String: (applied: Int64, unchanged: Int64)] = [:]
        for row in counts {
            var totals = bySource[row.source] ?? (0, 0)
            if row.outcome == "applied" { totals.applied += row.count } else { totals.unchanged += row.count }
            bySource[row.source] = totals
        }
        let largest = max(1, bySource.values.map { $0.applied + $0.unchanged }.max() ?? 1)
        let rows: [[String: Any]] = bySource.keys.sorted().map { source in
            let t = bySource[source] ?? (0, 0)
            return ["source": source, "applied": t.applied, "unchanged": t.unchanged,
                    "appliedWidth": t.applied * 100 / largest, "unchangedWidth": t.unchanged * 100 / largest]
        }
        return ["label": label, "rows": rows, "hasRows": !rows.isEmpty]
    }

    /// The purchases of the latest events, and the active entitlements: the lists behind the overview's counts.
    func lists(_ request: Request, _ context: ConsoleRequestContext, entitlements: Bool) async throws -> Response {
        let signedIn = try context.signedInOperator()
        if entitlements {
            let active = try await reading { try await store.activeEntitlements() }
            return pages.page("list", title: "Active entitlements", signedIn: signedIn, [
                "heading": "Active entitlements", "note": "The first 200, by app, environment and user.",
                "columns": ["User", "App", "Product", "State"].map { ["name": $0] },
                "rows": active.map { e in ["cells": [["text": e.user, "href": userHref(e.user)], ["text": "\(e.app) · \(e.environment)"],
                                                     ["text": e.product], ["text": e.state]]] },
                "hasRows": !active.isEmpty,
            ])
        }
        let recent = try await reading { try await store.recentlyTouchedPurchases() }
        return pages.page("list", title: "Purchases", signedIn: signedIn, [
            "heading": "Purchases, latest event first", "note": "The purchases of the latest events the history keeps (console.historyDays), 100 at most.",
            "columns": ["Purchase", "Latest event", "Outcome", "User", "Received"].map { ["name": $0] },
            "rows": recent.map { entry in
                var user: [String: String] = ["text": entry.user ?? ""]
                if let id = entry.user { user["href"] = userHref(id) }
                return ["cells": [["text": entry.purchaseId, "href": purchaseHref(entry.purchaseId)], ["text": entry.type], ["text": entry.outcome],
                                  user, ["text": entry.receivedAt]]]
            },
            "hasRows": !recent.isEmpty,
        ])
    }

    /// A purchase id, a transaction or order id, a checkout id, or a user id: one match opens its page, several are listed.
    func search(_ request: Request, _ context: ConsoleRequestContext) async throws -> Response {
        let signedIn = try context.signedInOperator()
        let query = String(request.uri.queryParameters.get("q") ?? "").trimmingCharacters(in: .whitespaces)
        guard !query.isEmpty else { return pages.redirect(to: pages.base) }
        guard query.utf8.count <= 512, !Self.hasControl(query) else {
            throw Rejection(ConsoleReason.invalidRequest, "search for at most 512 bytes, without control characters")
        }
        var results: [[String: String]] = []
        // Events name transactions and purchases with their store's prefix (`apple:`, `google:`); people paste them bare.
        let ids = query.contains(":") ? [query] : [query] + Self.storePrefixes.map { $0 + query }
        let (purchase, byTransaction, byCheckout, userApps) = try await reading {
            (PurchaseIds.isWellFormed(query) ? try await store.purchase(id: query) : nil,
             try await store.purchaseIds(withTransactionOrSubject: ids), try await store.purchaseIds(forCheckout: query),
             try await store.appsAndEnvironments(ofUser: query))
        }
        if purchase != nil { results.append(["href": purchaseHref(query), "label": "Purchase \(query)"]) }
        for id in byTransaction where !id.isExactly(query) {
            results.append(["href": purchaseHref(id), "label": "Purchase \(id) (transaction, order or original transaction \(query))"])
        }
        for id in byCheckout { results.append(["href": purchaseHref(id), "label": "Purchase \(id) (paid through checkout \(query))"]) }
        if !userApps.isEmpty {
            results.append(["href": userHref(query), "label": "User \(query) (\(userApps.map { "\($0.app) \($0.environment)" }.joined(separator: ", ")))"])
        }
        if results.count == 1, let only = results.first?["href"] { return pages.redirect(to: only) }
        return pages.page("search", title: "Search", signedIn: signedIn, query: query,
                          ["results": results, "hasResults": !results.isEmpty])
    }

    /// A user's entitlements and purchases, per app and environment.
    func user(_ request: Request, _ context: ConsoleRequestContext) async throws -> Response {
        let signedIn = try context.signedInOperator()
        guard let user = request.uri.queryParameters.get("id").map({ String($0) }), !user.isEmpty, user.utf8.count <= 512,
              !Self.hasControl(user) else {
            throw Rejection(ConsoleReason.invalidRequest, "name the user: ?id=<user id> (at most 512 bytes, no control characters)")
        }
        let nowMs = now()
        let groups: [[String: Any]] = try await reading {
            var groups: [[String: Any]] = []
            for (app, environment) in try await store.appsAndEnvironments(ofUser: user) {
                let entitlements = try await store.entitlements(app: app, user: user, environment: environment) ?? []
                let purchases = try await store.purchases(app: app, user: user, environment: environment)
                groups.append([
                    "app": app, "environment": environment,
                    "entitlements": entitlements.map { e -> [String: Any] in
                        let active = e.isActive(atMs: nowMs)
                        return ["product": e.product, "state": e.state.rawValue, "access": active ? "granted" : "none",
                                "accessClass": active ? "granted" : "denied", "until": Self.time(e.gracePeriodExpiresAtMs ?? e.expiresAtMs),
                                "purchaseHref": purchaseHref(store.purchaseIds.id(of: PurchaseKey(source: e.source, app: e.app, environment: e.environment, subject: e.subject)))]
                    },
                    "hasEntitlements": !entitlements.isEmpty,
                    "purchases": purchases.map { p -> [String: Any] in
                        let id = store.purchaseIds.id(of: p.key)
                        return ["href": purchaseHref(id), "shortId": String(id.prefix(12)), "source": p.key.source, "product": p.product ?? "",
                                "state": p.state.rawValue, "expires": Self.time(p.expiresAtMs), "lastEvent": p.lastEventType]
                    },
                ])
            }
            return groups
        }
        guard !groups.isEmpty else { throw Rejection(ConsoleReason.notFound, "the store links no purchase to this user") }
        return pages.page("user", title: "User", signedIn: signedIn, ["userId": user, "groups": groups])
    }

    /// A purchase, and every event that touched it in order, with what each did.
    func purchase(_ request: Request, _ context: ConsoleRequestContext) async throws -> Response {
        let signedIn = try context.signedInOperator()
        guard let id = context.parameters.get("purchase"), PurchaseIds.isWellFormed(id) else {
            throw Rejection(ConsoleReason.notFound, "no such purchase")
        }
        let (found, history) = try await reading { (try await store.purchase(id: id), try await store.history(ofPurchase: id)) }
        guard let purchase = found else { throw Rejection(ConsoleReason.notFound, "no such purchase") }
        // The deliveries that carried its events (a webhook redelivered carried its event more than once).
        let arrivals = try await reading { try await store.rawDeliveries(ofEvents: history.map(\.eventId)) }
        // What the workers did for it beyond the projection: the messages its events made for each endpoint,
        // and its last read from its store. Shown as "unknown" when they cannot be read now.
        let deliveries = try? await operations.deliveries(ofEvents: history.map(\.eventId))
        let refreshed = try? await store.lastRefresh(purchase.key)
        let calls = (try? await store.storeCalls(purchase.key)) ?? []
        let nowMs = now()
        // Bodies inline up to 256 KiB a page, each at most 16 KiB; the others are a click away, on their delivery's page.
        var inlineBudget = 262_144
        let steps: [[String: Any]] = history.enumerated().map { index, entry in
            var step: [String: Any] = [
                "index": index + 1, "type": entry.type, "outcome": entry.outcome, "occurredAt": entry.occurredAt,
                "receivedAt": entry.receivedAt, "eventId": EventRedaction.eventId(entry.eventId, source: entry.source, ids: store.purchaseIds),
                "eventJSON": EventRedaction.prettyEvent(entry.eventJSON, ids: store.purchaseIds),
                "hasEntitlements": !entry.entitlements.isEmpty,
                "entitlements": entry.entitlements.map { e -> [String: Any] in
                    var transfer: String?
                    if let from = e.transferredFrom { transfer = "moved from \(from)" }
                    if let to = e.transferredTo { transfer = "moved to \(to)" }
                    let active = e.active && ((e.gracePeriodExpiresAtMs ?? e.expiresAtMs).map { $0 > nowMs } ?? true)
                    var shown: [String: Any] = ["user": e.user, "userHref": userHref(e.user), "product": e.product, "state": e.state,
                                                "access": e.active ? (active ? "granted" : "granted then, ended since") : "none"]
                    if let transfer { shown["transfer"] = transfer }
                    return shown
                },
            ]
            let carried = arrivals.filter { $0.eventId.isExactly(entry.eventId) }
            step["hasArrivals"] = !carried.isEmpty
            step["arrivals"] = carried.map { a -> [String: Any] in
                var arrival: [String: Any] = ["source": a.source, "receivedAt": a.receivedAt ?? "", "bytes": a.bodyBytes,
                                              "position": "\(a.position.partition):\(a.position.offset)",
                                              "href": pages.base + "/deliveries/\(a.source)/\(a.position.partition):\(a.position.offset)"]
                if let scope = a.scope { arrival["scope"] = scope }
                if let body = a.bodyShown, body.utf8.count <= 16_384, body.utf8.count <= inlineBudget {
                    arrival["body"] = body
                    inlineBudget -= body.utf8.count
                }
                return arrival
            }
            let sent = (deliveries ?? []).filter { $0.eventId.isExactly(entry.eventId) }
            step["hasDeliveries"] = !sent.isEmpty
            step["deliveries"] = sent.map { d -> [String: Any] in
                ["endpoint": d.endpoint, "messageId": d.messageId, "user": d.user, "product": d.product, "status": d.status,
                 "attempts": d.attempts, "updatedAt": Self.time(d.updatedAtMs)]
            }
            if let transaction = entry.transactionId { step["transactionId"] = transaction }
            if let state = entry.stateAfter { step["stateAfter"] = state }
            if let position = entry.position { step["position"] = "\(position.topic) partition \(position.partition) offset \(position.offset)" }
            return step
        }
        var values: [String: Any] = [
            "purchaseId": id, "source": purchase.key.source, "app": purchase.key.app, "environment": purchase.key.environment,
            "product": purchase.product ?? "", "state": purchase.state.rawValue, "expires": Self.time(purchase.expiresAtMs),
            "user": purchase.user ?? "", "steps": steps,
        ]
        if let user = purchase.user { values["userHref"] = userHref(user) }
        if signedIn.canAct, let endpoints = try? await operations.endpoints() {
            values["endpoints"] = endpoints.filter { $0.kind == "events" }.map { ["name": $0.name] }
        }
        if let superseded = purchase.supersededBy {
            // The replacing purchase by its id (a Google subject is a purchase token), linked.
            let replacing = store.purchaseIds.id(source: purchase.key.source, app: purchase.key.app, environment: purchase.key.environment,
                                                 subject: superseded)
            values["supersededBy"] = replacing
            values["supersededHref"] = purchaseHref(replacing)
        }
        if deliveries == nil { values["deliveriesUnknown"] = true }
        values["hasStoreCalls"] = !calls.isEmpty
        values["storeCalls"] = calls.map { ["at": Self.time($0.atMs), "call": $0.call, "outcome": $0.outcome, "detail": $0.detail] }
        if let refreshed { values["lastRefresh"] = "\(Self.time(refreshed.atMs)): \(refreshed.outcome)" }
        return pages.page("purchase", title: "Purchase", signedIn: signedIn, values)
    }

    static let storePrefixes = ["apple:", "google:"]

    private func purchaseHref(_ id: String) -> String { pages.base + "/purchases/" + id }
    private func userHref(_ user: String) -> String { pages.base + "/user?id=" + PercentEncoding.encode(user) }

    /// The store's answer, or 503 when it cannot answer now.
    private func reading<T>(_ read: () async throws -> T) async throws(Rejection) -> T {
        do { return try await read() } catch {
            throw Rejection(ConsoleReason.storeUnavailable, "the store cannot answer now; try again shortly", retryAfterSeconds: 5)
        }
    }

    static func hasControl(_ text: String) -> Bool {
        text.unicodeScalars.contains { $0.properties.generalCategory == .control }
    }

    static func time(_ ms: Int64?) -> String {
        guard let ms, let stamp = Timestamp(representableMillisecondsSince1970: ms) else { return "" }
        return stamp.rfc3339
    }
}
