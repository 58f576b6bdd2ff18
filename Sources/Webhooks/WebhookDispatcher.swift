import Config
import Entitlements
import Foundation
import Events
import Logging
import Merchant
import Outbound
import ServiceHost
import ServiceLifecycle
import Synchronization
import Toolkit

/// Delivers what the projection recorded: claims the due head of each lane (one entitlement's messages
/// for one endpoint, oldest first), delivers up to `webhooks.maxConcurrentDeliveries` at once, records
/// every attempt, and moves each delivery on (delivered; due again after the schedule's next wait or the
/// endpoint's `Retry-After`, whichever is later; parked after the last). A failing lane holds only its
/// own later messages. Every replica runs one: claims keep a lane to one dispatcher at a time.
public struct WebhookDispatcher: Service {
    let endpoints: [String: WebhookEndpoint]
    let settings: WebhookSettings
    let store: WebhookStore
    /// Where attempts are recorded: one transaction for those that finish together.
    let commits: AttemptCommits
    let purchaseIds: PurchaseIds
    let catalog: CatalogSettings
    let client: EndpointHTTPClient
    let wakeup: WebhookWakeup
    let metrics: WebhookMetrics
    let logger: Logger
    let clock: @Sendable () -> Int64
    let lookups: HostLookups

    public init(endpoints: [WebhookEndpoint], settings: WebhookSettings, store: WebhookStore, purchaseIds: PurchaseIds,
                catalog: CatalogSettings, client: EndpointHTTPClient? = nil, wakeup: WebhookWakeup, metrics: WebhookMetrics, logger: Logger,
                clock: @escaping @Sendable () -> Int64 = { Timestamp.now.millisecondsSince1970 },
                resolver: @escaping @Sendable (String, Int) async -> [String] = HostResolver.addresses) {
        self.endpoints = Dictionary(endpoints.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        self.settings = settings
        self.store = store
        commits = AttemptCommits(store: store, disableAfterMs: Int64(settings.disableAfterSeconds) * 1_000)
        self.purchaseIds = purchaseIds
        self.catalog = catalog
        self.client = client ?? EndpointHTTPClient(extraRootsFile: settings.caFile)
        self.wakeup = wakeup
        self.metrics = metrics
        self.logger = logger
        self.clock = clock
        lookups = HostLookups(resolver: resolver)
    }

    /// The longest an attempt may take (its name's lookup and its exchange, each bounded by the timeout),
    /// and a margin: a claim outlives its attempt.
    var claimMs: Int64 {
        2 * Int64(endpoints.values.map { Int($0.timeout.components.seconds) * 1_000 + Int($0.timeout.components.attoseconds / 1_000_000_000_000_000) }.max() ?? 15_000)
            + 30_000
    }

    public func run() async throws {
        let inFlight = InFlight()
        let wakeup = wakeup

        await withGracefulShutdownHandler {
            await withDiscardingTaskGroup { group in
                var enabled: [String] = []
                var checkedAt: Int64 = 0
                var countedAt: Int64 = 0
                var prunedAt: Int64 = 0
                var failures = 0
                var turn = 0
                while !Task.isCancelled, !Task.isShuttingDownGracefully {
                    let now = clock()
                    if now - checkedAt >= 1_000 {
                        checkedAt = now
                        enabled = await enabledEndpoints() ?? enabled
                    }
                    if now - countedAt >= 5_000 {
                        countedAt = now
                        await recordGauges(now: now, enabled: enabled)
                    }
                    if now - prunedAt >= 60_000 {
                        prunedAt = now
                        await prune(now: now)
                    }
                    let busy = inFlight.total
                    let free = settings.maxConcurrentDeliveries - busy
                    var claimed: [ClaimedDelivery] = []
                    var failed = false
                    // While attempts are in flight, claims wait for a quarter of the slots to be free (a claim is a
                    // write transaction, and one per finished attempt cost a third of a busy dispatcher); until
                    // then only endpoints with none in flight claim: slow endpoints holding the slots never hold them up.
                    let onlyIdle = busy > 0 && free < max(1, settings.maxConcurrentDeliveries / 4)
                    if free > 0, !enabled.isEmpty, !onlyIdle || enabled.contains(where: { inFlight.count($0) == 0 }) {
                        // With several endpoints enabled, none takes more than half the slots, and each poll
                        // starts with the next one: a slow or busy endpoint cannot starve the others.
                        let perEndpoint = enabled.count > 1 ? max(1, settings.maxConcurrentDeliveries / 2) : settings.maxConcurrentDeliveries
                        turn = (turn + 1) % enabled.count
                        for name in enabled[turn...] + enabled[..<turn] where claimed.count < free {
                            let room = min(free - claimed.count, perEndpoint - inFlight.count(name), 256)
                            guard room > 0, !onlyIdle || inFlight.count(name) == 0 else { continue }
                            do {
                                claimed += try await store.claim(endpoints: [name], nowMs: now, claimUntilMs: now + claimMs, limit: room)
                            } catch {
                                // What was claimed already is still sent.
                                failed = true
                                failures += 1
                                if failures == 1 { logger.warning("webhook dispatcher cannot read the store; trying again", metadata: ["error": "\(error)"]) }
                                break
                            }
                        }
                        if !failed { failures = 0 }
                    }
                    for delivery in claimed {
                        inFlight.add(delivery.endpoint, 1)
                        group.addTask {
                            await deliver(delivery)
                            inFlight.add(delivery.endpoint, -1)
                            wakeup.signal()
                        }
                    }
                    if failed {
                        try? await Task.sleep(for: PeriodicJob.backoff(afterFailures: failures))
                    } else if claimed.isEmpty || claimed.count == free {
                        await wakeup.wait(upTo: .milliseconds(250))
                    }
                }
            }
        } onGracefulShutdown: {
            wakeup.signal()
        }
        await client.shutdown()
    }

    /// The endpoints delivered to now: configured enabled, not disabled in the store.
    private func enabledEndpoints() async -> [String]? {
        guard let states = try? await store.states() else { return nil }
        return endpoints.values.filter { $0.configuredEnabled && !(states[$0.name]?.disabled ?? false) }.map(\.name).sorted()
    }

    /// The gauges, from the store (every replica reports the whole queue).
    private func recordGauges(now: Int64, enabled: [String]) async {
        guard let stats = try? await store.stats() else { return }
        for name in endpoints.keys {
            let one = stats[name] ?? WebhookStore.EndpointStats()
            metrics.state(endpoint: name, pending: one.pending, parked: one.parked,
                          oldestPendingSeconds: one.oldestPendingCreatedAtMs.map { Double(max(0, now - $0)) / 1_000 } ?? 0,
                          enabled: enabled.contains(name))
        }
    }

    /// What `webhooks.retentionDays` no longer keeps, a batch at a time (at most ten a pass).
    private func prune(now: Int64) async {
        for _ in 0..<10 {
            guard let pruned = try? await store.prune(beforeMs: now - Int64(settings.retentionDays) * 86_400_000),
                  pruned == WebhookStore.pruneBatch else { return }
        }
    }

    /// One attempt of one message, recorded.
    func deliver(_ delivery: ClaimedDelivery) async {
        guard let endpoint = endpoints[delivery.endpoint] else { return }
        let attempt = delivery.attempts + 1
        let started = ContinuousClock.now
        let result = await send(delivery, to: endpoint)
        // A cancelled attempt (the process stopping) is not one: its claim lapses and the message goes again.
        if Task.isCancelled { return }
        let elapsed = ContinuousClock.now - started
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        let now = clock()
        var next: Int64?
        if result.outcome != .delivered, attempt < settings.retryScheduleMs.count {
            let wait = max(Int64(settings.retryScheduleMs[attempt]), result.retryAfterMs ?? 0)
            next = now + wait
        }
        let record = AttemptRecord(endpoint: endpoint.name, sequence: delivery.sequence, lane: delivery.message.lane, token: delivery.token,
                                   attempt: attempt,
                                   outcome: result.outcome, statusCode: result.status, latencyMs: Int64(seconds * 1_000),
                                   excerpt: result.excerpt, atMs: now, nextAttemptAtMs: next)
        metrics.attempt(endpoint: endpoint.name, outcome: result.outcome, seconds: seconds)
        if result.outcome != .delivered, next == nil {
            metrics.parked(endpoint: endpoint.name)
            logger.warning("webhook message parked after its last attempt", metadata: [
                "endpoint": .string(endpoint.name), "message_id": .string(delivery.message.messageId), "attempts": "\(attempt)",
                "outcome": .string(result.outcome.rawValue)])
        }
        do {
            if try await commits.finish(record) {
                metrics.disabledForFailing(endpoint: endpoint.name)
                logger.error("webhook endpoint disabled: every attempt failed for webhooks.disableAfterSeconds; tollgate webhooks enable resumes it",
                             metadata: ["endpoint": .string(endpoint.name)])
            }
        } catch {
            // Not recorded: the claim lapses and the message is sent again (at least once).
            logger.warning("webhook attempt not recorded; the message will be sent again",
                           metadata: ["endpoint": .string(endpoint.name), "error": "\(error)"])
        }
    }

    static let userAgent = "Tollgate-Webhooks/1"

    struct SendResult: Sendable {
        var outcome: AttemptRecord.Outcome
        var status: Int? = nil
        var excerpt: String
        var retryAfterMs: Int64? = nil
    }

    private func send(_ delivery: ClaimedDelivery, to endpoint: WebhookEndpoint) async -> SendResult {
        let addresses: [String]
        switch await connectAddresses(endpoint) {
        case .success(let checked): addresses = checked
        case .failure(let refusal): return SendResult(outcome: refusal.outcome, excerpt: refusal.reason)
        }
        let body: [UInt8]
        var extraHeaders: [(name: String, value: String)]
        if let forwarded = delivery.message.forwarded {
            // The sender's request as it arrived, its own headers (content type and user agent among them) kept.
            body = forwarded.body
            extraHeaders = forwarded.headers.map { ($0.name, $0.value) }
            let names = Set(forwarded.headers.map(\.name))
            if !names.contains("content-type") { extraHeaders.append(("content-type", "application/json")) }
            if !names.contains("user-agent") { extraHeaders.append(("user-agent", Self.userAgent)) }
        } else {
            do {
                body = try WebhookPayload.body(delivery.message, ids: purchaseIds, catalog: catalog)
            } catch {
                return SendResult(outcome: .connection, excerpt: "the message could not be written: \(type(of: error))")
            }
            extraHeaders = [("content-type", WebhookPayload.contentType), ("user-agent", Self.userAgent)]
        }
        let timestamp = clock() / 1_000
        guard var headers = WebhookSignature.headers(id: delivery.message.messageId, timestampSeconds: timestamp, body: body,
                                                     secrets: endpoint.secrets, keys: endpoint.keys) else {
            return SendResult(outcome: .connection, excerpt: "the message could not be signed")
        }
        let signature = headers.last?.value ?? ""
        headers += extraHeaders
        do {
            let response = try await client.post(url: endpoint.target.requestURL, host: endpoint.target.host, addresses: addresses, headers: headers, body: body,
                                                 timeout: endpoint.timeout, maxResponseBytes: 4_096)
            let excerpt = Self.excerpt(response.body, hiding: signature)
            if (200...299).contains(response.status) { return SendResult(outcome: .delivered, status: response.status, excerpt: excerpt) }
            return SendResult(outcome: .status, status: response.status, excerpt: excerpt,
                              retryAfterMs: response.headers["retry-after"].flatMap(Self.retryAfterMs))
        } catch {
            let timedOut = error.description.hasPrefix("timed out")
            return SendResult(outcome: timedOut ? .timeout : .connection, excerpt: error.description)
        }
    }

    struct Refusal: Error {
        var outcome: AttemptRecord.Outcome
        var reason: String
    }

    /// The addresses to connect to: the URL's literal, or those its name resolves to, when every address
    /// the name has is one this endpoint may reach (a name answering a public and a private address is
    /// refused: which one a connection gets is the resolver's choice).
    func connectAddresses(_ endpoint: WebhookEndpoint) async -> Result<[String], Refusal> {
        let host = endpoint.target.host
        let addresses = EndpointAddress.classify(host) != nil ? [host] : await lookUp(host, port: endpoint.target.port, within: endpoint.timeout)
        guard !addresses.isEmpty else { return .failure(Refusal(outcome: .connection, reason: "the endpoint's name does not resolve")) }
        for address in addresses {
            let kind = EndpointAddress.classify(address) ?? .reserved
            let allowed = kind == .public || (kind == .loopback && settings.allowLoopback)
                || (kind == .privateNetwork && endpoint.allowPrivateNetwork)
            guard allowed else {
                return .failure(Refusal(outcome: .addressRefused,
                                        reason: "the endpoint resolves to a \(kind.rawValue) address, which webhooks may not reach"))
            }
        }
        return .success(addresses)
    }

    /// The name's addresses (`HostLookups`: one lookup per host at a time, its answer kept a few seconds),
    /// or none once `timeout` passed (a slow DNS server fails the attempt; the lookup finishes on its own).
    private func lookUp(_ host: String, port: Int, within timeout: Duration) async -> [String] {
        let lookup: Task<[String], Never>
        switch lookups.addresses(host, port: port) {
        case .answered(let addresses): return addresses
        case .pending(let pending): lookup = pending
        }
        let first = FirstAnswer()
        return await withCheckedContinuation { continuation in
            first.wait(continuation)
            let timer = Task {
                try? await Task.sleep(for: timeout)
                first.answer([])
            }
            Task {
                first.answer(await lookup.value)
                timer.cancel()
            }
        }
    }

    /// At most 256 bytes of the answer, printable, our signature (should an endpoint echo it) removed.
    static func excerpt(_ body: [UInt8], hiding signature: String) -> String {
        var text = String(decoding: body.prefix(512), as: UTF8.self)
        if !signature.isEmpty { text = text.replacingOccurrences(of: signature, with: "[signature]") }
        let printable = String(String.UnicodeScalarView(text.unicodeScalars.map { $0.value < 0x20 || $0.value == 0x7F ? " " : $0 }))
        var kept = ""
        for character in printable {
            guard kept.utf8.count + character.utf8.count <= 256 else { break }
            kept.append(character)
        }
        return kept
    }

    /// `Retry-After` in seconds (the form endpoints send), at most a day.
    static func retryAfterMs(_ value: String) -> Int64? {
        guard let seconds = Int64(value.trimmingCharacters(in: .whitespaces)), seconds >= 0 else { return nil }
        return min(seconds, 86_400) * 1_000
    }
}

/// The attempts under way, per endpoint, shared with their tasks.
private final class InFlight: Sendable {
    private let counts = Mutex<[String: Int]>([:])

    var total: Int { counts.withLock { $0.values.reduce(0, +) } }
    func count(_ endpoint: String) -> Int { counts.withLock { $0[endpoint] ?? 0 } }
    func add(_ endpoint: String, _ change: Int) { counts.withLock { $0[endpoint, default: 0] += change } }
}

/// Resumes its waiter with the first answer given; later ones are dropped.
private final class FirstAnswer: Sendable {
    private let waiter = Mutex<CheckedContinuation<[String], Never>?>(nil)

    func wait(_ continuation: CheckedContinuation<[String], Never>) { waiter.withLock { $0 = continuation } }

    func answer(_ addresses: [String]) {
        let continuation = waiter.withLock { waiter -> CheckedContinuation<[String], Never>? in
            defer { waiter = nil }
            return waiter
        }
        continuation?.resume(returning: addresses)
    }
}

/// Name lookups shared per host and port: the attempts to one host wait for one lookup at a time, and
/// its answer serves the next few seconds. getaddrinfo gives no TTL; a short fixed one keeps a busy
/// endpoint from asking the resolver for every attempt (and from holding a thread each while DNS is
/// slow). Every answer is still checked before each attempt, and the connection pinned to it.
final class HostLookups: Sendable {
    enum Lookup {
        case answered([String])
        case pending(Task<[String], Never>)
    }

    private enum Entry {
        case answered([String], until: ContinuousClock.Instant)
        case pending(Task<[String], Never>)
    }

    static let kept: Duration = .seconds(5)
    private let resolver: @Sendable (String, Int) async -> [String]
    /// One entry per endpoint host: as many as the configuration names.
    private let entries = Mutex<[String: Entry]>([:])

    init(resolver: @escaping @Sendable (String, Int) async -> [String]) { self.resolver = resolver }

    func addresses(_ host: String, port: Int) -> Lookup {
        let key = "\(port)/\(host)"
        let now = ContinuousClock.now
        return entries.withLock { entries -> Lookup in
            switch entries[key] {
            case .answered(let addresses, let until)? where until > now: return .answered(addresses)
            case .pending(let task)?: return .pending(task)
            default:
                let resolver = resolver
                let task = Task { [weak self] in
                    let addresses = await resolver(host, port)
                    // No answer is not kept: the next attempt asks again.
                    self?.entries.withLock { $0[key] = addresses.isEmpty ? nil : .answered(addresses, until: .now + Self.kept) }
                    return addresses
                }
                entries[key] = .pending(task)
                return .pending(task)
            }
        }
    }
}
