import Console
import Entitlements
import Events
import Foundation
import Kafka
import Config
import Merchant
import Rejections
import Synchronization
import Verifiers
import Webhooks

/// What the operator console's actions reach, from the workers: the dead-letter topic (read as `tollgate
/// dlq` reads it, replayed as `tollgate dlq replay` replays), the stores' APIs (the refresh the merchant
/// route makes), the outbound endpoints (as `tollgate webhooks` turns them) and the audit topic.
struct WorkerConsoleOperations: ConsoleOperations {
    let client: KafkaClientConfig
    let topics: TopicNames
    let store: EntitlementStore
    let producer: KafkaProducer
    let refresh: RefreshAPI
    let endpointList: [WebhookEndpoint]
    /// The senders' settings a raw delivery is verified again with (offline, as `tollgate replay` verifies);
    /// nil: re-verifying is refused.
    let senderSettings: SourcesSettings?
    let now: @Sendable () -> Int64

    /// The dead-letter topic read for pages, at most once every `listingSeconds` (pages and the overview share
    /// one read; an action reads afresh).
    let listing = DeadLetterListing()
    /// Raw records read for the delivery pages: a page and its dry run read one once, and at most a few reads run at once.
    let rawRecords = RawRecordReads()
    static let listingSeconds: Int64 = 10
    /// The newest dead letters a page lists.
    static let listed = 500

    func deadLetters() async throws -> [ConsoleDeadLetter] {
        let letters = try await listing.letters(nowMs: now(), maxAgeMs: Self.listingSeconds * 1_000) {
            try await TopicScan.records(client: client, topic: topics.deadLetter).records.suffix(Self.listed).map { DeadLetter(record: $0) }
        }
        let counts = try await store.replayCounts()
        return letters.map { letter in
            let source = letter.record.headers.string(CloudEventHeaders.source) ?? ""
            let byToken = EventRedaction.namesPurchaseByToken(source: source)
            let withheld = "(withheld: a Google purchase token)"
            return ConsoleDeadLetter(
                position: letter.position, time: letter.time,
                eventId: letter.eventId.map { EventRedaction.eventId($0, source: source, ids: store.purchaseIds) } ?? "-",
                type: letter.type ?? "-", subject: byToken ? withheld : letter.subject ?? "-", error: letter.error,
                replays: counts[letter.position] ?? 0,
                headers: letter.decodedHeaders.map { header in
                    byToken && [CloudEventHeaders.id, CloudEventHeaders.subject].contains(header.name) ? (header.name, withheld) : header
                },
                body: byToken ? EventRedaction.prettyEvent(String(decoding: letter.record.value, as: UTF8.self), ids: store.purchaseIds)
                              : letter.prettyBody)
        }
    }

    func replayDeadLetter(at position: String, dryRun: Bool) async throws -> ActionOutcome {
        let letters = try await TopicScan.records(client: client, topic: topics.deadLetter).records.map { DeadLetter(record: $0) }
        guard let letter = letters.first(where: { $0.position == position }) else {
            return ActionOutcome("refused", "no dead letter at \(position)")
        }
        let replay = DeadLetterReplay(store: store, producer: dryRun ? nil : producer, eventsTopic: topics.events)
        switch try await replay.replay(letter, force: false, nowMs: now()) {
        // The position names it; its event id may hold a purchase token, and this sentence goes to the audit.
        case .replayed(let target): return ActionOutcome("done", "replayed \(position) to \(target)")
        case .wouldReplay(let target): return ActionOutcome("dry_run", "\(position) would be published again to \(target)")
        case .replayedBefore(let count):
            return ActionOutcome("refused", "\(position) was replayed \(count) time(s) already; `tollgate dlq replay --force` replays it again")
        }
    }

    func refreshPurchase(_ purchaseId: String) async throws -> ActionOutcome {
        let (changed, applied) = try await refresh.refreshForOperator(purchaseId: purchaseId)
        guard changed else { return ActionOutcome("done", "the store says what Tollgate held: nothing changed") }
        return ActionOutcome("done", applied ? "the store's word changed the purchase, and it is applied"
                                             : "the store's word changed the purchase; it is published and not applied yet")
    }

    func endpoints() async throws -> [ConsoleEndpoint] {
        let webhooks = WebhookStore(store: store)
        let states = try await webhooks.states(), stats = try await webhooks.stats()
        return endpointList.map { endpoint in
            let state = states[endpoint.name], counts = stats[endpoint.name] ?? WebhookStore.EndpointStats()
            let shown = !endpoint.configuredEnabled ? "disabled (configuration)"
                : state?.disabled == true ? "disabled (\(state?.disabledReason ?? "operator"))"
                : state?.failingSinceMs.map { "failing since \(Timestamp(millisecondsSince1970: $0).rfc3339)" } ?? "enabled"
            return ConsoleEndpoint(name: endpoint.name, kind: endpoint.kind.rawValue, origin: endpoint.origin, state: shown,
                                   enabled: endpoint.configuredEnabled && state?.disabled != true, pending: counts.pending, parked: counts.parked)
        }
    }

    func setEndpoint(_ name: String, enabled: Bool) async throws -> ActionOutcome {
        guard let endpoint = endpointList.first(where: { $0.name == name }) else { return ActionOutcome("refused", "no endpoint \(name)") }
        try await WebhookStore(store: store).setDisabled(name, !enabled, reason: "operator", nowMs: now())
        if enabled, !endpoint.configuredEnabled {
            return ActionOutcome("done", "\(name) enabled here; webhooks.endpoints sets enabled: false for it, so it stays off until that changes")
        }
        return ActionOutcome("done", "\(name) \(enabled ? "enabled: deliveries resume from where they stopped" : "disabled: its messages wait")")
    }

    /// The most messages one action sends again (in one transaction); more is `tollgate webhooks replay`'s work.
    static let replayedAtMost = 1_000
    /// The most kept messages a "last hours" replay reads to choose the endpoint's.
    static let readAtMost = 20_000

    func replayToEndpoint(_ name: String, _ scope: EndpointReplayScope, dryRun: Bool) async throws -> ActionOutcome {
        guard let endpoint = endpointList.first(where: { $0.name == name }) else { return ActionOutcome("refused", "no endpoint \(name)") }
        let webhooks = WebhookStore(store: store)
        let sequences: [Int64]
        switch scope {
        case .purchase(let purchaseId):
            // The purchase's messages are those its events made: found through its history, not a scan of every message.
            // Its newest events: `messages(ofEvents:)` reads 200.
            let events = try await store.history(ofPurchase: purchaseId).map(\.eventId).suffix(200).map { $0 }
            sequences = try await webhooks.messages(ofEvents: events).filter { endpoint.takes($0) }.map(\.sequence)
        case .parked:
            sequences = try await webhooks.parkedSequences(endpoint: name, limit: Self.replayedAtMost + 1)
        case .lastHours(let hours):
            let kept = try await webhooks.messages(sinceMs: now() - Int64(hours) * 3_600_000, limit: Self.readAtMost + 1)
            guard kept.count <= Self.readAtMost else {
                return ActionOutcome("refused", "more than \(Self.readAtMost) messages were kept in that time: `tollgate webhooks replay --endpoint \(name) --since ...` sends them")
            }
            sequences = kept.filter { endpoint.takes($0) }.prefix(Self.replayedAtMost + 1).map(\.sequence)
        }
        guard !sequences.isEmpty else { return ActionOutcome("refused", "\(name) keeps none of \(scope.description) (webhooks.retentionDays)") }
        guard sequences.count <= Self.replayedAtMost else {
            return ActionOutcome("refused", "more than \(Self.replayedAtMost) messages: `tollgate webhooks replay --endpoint \(name) --since ...` sends them")
        }
        if dryRun { return ActionOutcome("dry_run", "\(sequences.count) message(s) would be sent to \(name) again") }
        let queued = try await webhooks.replay(endpoint: name, sequences: sequences, nowMs: now())
        if queued < sequences.count {
            return ActionOutcome("done", "queued \(queued) of \(sequences.count) message(s); the others' lane has an attempt in flight: send again once it is answered")
        }
        return ActionOutcome("done", "queued \(queued) message(s) for \(name)")
    }

    func deliveries(ofEvents eventIds: [String]) async throws -> [ConsoleDelivery] {
        try await WebhookStore(store: store).deliveries(ofEvents: eventIds).map {
            ConsoleDelivery(eventId: $0.eventId, messageId: $0.messageId, endpoint: $0.endpoint, user: $0.user, product: $0.product,
                            status: $0.status, attempts: $0.attempts, updatedAtMs: $0.updatedAtMs)
        }
    }

    func rawRecord(source: String, partition: Int32, offset: Int64) async throws -> ConsoleRawRecord? {
        guard let sender = topics.sources.first(where: { $0.rawValue == source }) else { return nil }
        guard let record = try await rawRecords.read(topics.raw(sender), partition, offset, nowMs: now(), client: client) else { return nil }
        return ConsoleRawRecord(timestampMs: record.timestampMs, headers: record.headers.map { ($0.name, $0.stringValue ?? "") },
                                body: record.value)
    }

    func reverify(source: String, partition: Int32, offset: Int64, dryRun: Bool) async throws -> ActionOutcome {
        guard let sender = topics.sources.first(where: { $0.rawValue == source }) else { return ActionOutcome("refused", "no sender \(source)") }
        guard let senderSettings else { return ActionOutcome("refused", "these workers hold no sender settings to verify with") }
        let position = "\(topics.raw(sender)) \(partition):\(offset)"
        guard let record = try await rawRecords.read(topics.raw(sender), partition, offset, nowMs: now(), client: client) else {
            return ActionOutcome("refused", "\(position) is no longer on its topic (its retention)")
        }
        let verifier: any WebhookSource
        do {
            verifier = try SenderCatalog.standard.offlineSource(named: source, settings: senderSettings)
        } catch {
            return ActionOutcome("refused", "\(source) cannot be verified offline with these settings")
        }
        let request = RawDeliveryHeaders.request(body: record.value, headers: record.headers.map { ($0.name, $0.stringValue) },
                                                 timestampMs: record.timestampMs, source: sender)
        let events: [NormalizedEvent]
        do throws(Rejection) {
            events = try await verifier.reverify(request).events
        } catch {
            // The reason code, not the message: a sender's message may quote what it refused.
            return ActionOutcome("refused", "\(position) does not verify now: \(error.code)")
        }
        guard !events.isEmpty else { return ActionOutcome("refused", "\(position) verifies and carries no event") }
        let recorded = record.headers.string(CloudEventHeaders.id)
        let sameIds = recorded.map { events[0].id.isExactly($0) } ?? true
        let shown = events.map { "\(EventRedaction.eventId($0.id, source: source, ids: store.purchaseIds)) (\($0.type.rawValue))" }
            .joined(separator: ", ")
        let idNote = sameIds ? "" : "; its first event's id differs from the one recorded when it arrived"
        if dryRun { return ActionOutcome("dry_run", "\(position) verifies: \(events.count) event(s) would be published again: \(shown)\(idNote)") }
        for event in events {
            _ = try await producer.send(CloudEventRecord.message(event, topic: topics.events))
        }
        return ActionOutcome("done", "\(position) verified; \(events.count) event(s) published again: \(shown)\(idNote)")
    }

    func publishAudit(_ entry: AuditEntry) async throws {
        _ = try await producer.send(KafkaMessage(topic: topics.audit, key: Array(entry.operatorName.utf8), value: AuditRecord.json(entry),
                                                 headers: [KafkaHeader(name: "content-type", string: "application/json")]))
    }
}

/// An audit record's value on `tollgate.audit` (docs/topics.md).
enum AuditRecord {
    struct Value: Encodable {
        let sequence: Int64
        let at: String
        let `operator`: String
        let action: String
        let target: String
        let outcome: String
        let detail: String
    }

    static func json(_ entry: AuditEntry) -> [UInt8] {
        let value = Value(sequence: entry.sequence, at: Timestamp(millisecondsSince1970: entry.atMs).rfc3339, operator: entry.operatorName,
                          action: entry.action, target: entry.target, outcome: entry.outcome, detail: entry.detail)
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return (try? encoder.encode(value)).map(Array.init) ?? []
    }
}

/// Raw records read by position for the console: each kept 30 seconds (a delivery's page, then its dry run
/// and its action, read it once), at most 4 reads of the broker at once (past them: 503, try again).
final class RawRecordReads: Sendable {
    private struct Key: Hashable { let topic: String, partition: Int32, offset: Int64 }
    private let state = Mutex<(reading: Int, kept: [Key: (atMs: Int64, record: KafkaRecord?)])>((0, [:]))
    static let concurrentReads = 4

    func read(_ topic: String, _ partition: Int32, _ offset: Int64, nowMs: Int64, client: KafkaClientConfig) async throws -> KafkaRecord? {
        let key = Key(topic: topic, partition: partition, offset: offset)
        let cached: KafkaRecord?? = try state.withLock { state in
            state.kept = state.kept.filter { nowMs - $0.value.atMs < 30_000 }
            if let kept = state.kept[key] { return .some(kept.record) }
            guard state.reading < Self.concurrentReads else {
                throw Rejection(ConsoleReason.storeUnavailable, "the broker is being read for other pages; try again shortly", retryAfterSeconds: 2)
            }
            state.reading += 1
            return .none
        }
        if let cached { return cached }
        defer { state.withLock { $0.reading -= 1 } }
        let record = try await TopicScan.record(client: client, topic: topic, partition: partition, offset: offset)
        state.withLock { state in
            if state.kept.count < 64 { state.kept[key] = (nowMs, record) }
        }
        return record
    }
}

/// The last read of the dead-letter topic, and when it was made.
final class DeadLetterListing: Sendable {
    private let last = Mutex<(atMs: Int64, letters: [DeadLetter])?>(nil)

    func letters(nowMs: Int64, maxAgeMs: Int64, read: () async throws -> [DeadLetter]) async throws -> [DeadLetter] {
        if let last = last.withLock({ $0 }), nowMs - last.atMs < maxAgeMs { return last.letters }
        let letters = try await read()
        last.withLock { $0 = (nowMs, letters) }
        return letters
    }
}
