import Console
import Entitlements
import Events
import Foundation
import Kafka
import Merchant
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
    let now: @Sendable () -> Int64

    func deadLetters() async throws -> [ConsoleDeadLetter] {
        let letters = try await TopicScan.records(client: client, topic: topics.deadLetter).records.map { DeadLetter(record: $0) }
        var shown: [ConsoleDeadLetter] = []
        for letter in letters {
            let replays = try await store.replayCount(partition: letter.record.partition, offset: letter.record.offset)
            shown.append(ConsoleDeadLetter(position: letter.position, time: letter.time, eventId: letter.eventId ?? "-", type: letter.type ?? "-",
                                           subject: letter.subject ?? "-", error: letter.error, replays: replays,
                                           headers: letter.decodedHeaders, body: letter.prettyBody))
        }
        return shown
    }

    func replayDeadLetter(at position: String, dryRun: Bool) async throws -> ActionOutcome {
        let letters = try await TopicScan.records(client: client, topic: topics.deadLetter).records.map { DeadLetter(record: $0) }
        guard let letter = letters.first(where: { $0.position == position }) else {
            return ActionOutcome("refused", "no dead letter at \(position)")
        }
        let replay = DeadLetterReplay(store: store, producer: dryRun ? nil : producer, eventsTopic: topics.events)
        switch try await replay.replay(letter, force: false, nowMs: now()) {
        case .replayed(let target): return ActionOutcome("done", "replayed \(position) (\(letter.eventId ?? "-")) to \(target)")
        case .wouldReplay(let target): return ActionOutcome("dry_run", "\(position) (\(letter.eventId ?? "-")) would be published again to \(target)")
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

    func replayToEndpoint(_ name: String, purchaseId: String, dryRun: Bool) async throws -> ActionOutcome {
        guard let endpoint = endpointList.first(where: { $0.name == name }) else { return ActionOutcome("refused", "no endpoint \(name)") }
        let webhooks = WebhookStore(store: store)
        let messages = try await webhooks.messages(for: endpoint, sinceMs: 0, purchaseId: purchaseId, messageId: nil, ids: store.purchaseIds)
        guard !messages.isEmpty else { return ActionOutcome("refused", "\(name) keeps no message about this purchase (webhooks.retentionDays)") }
        if dryRun { return ActionOutcome("dry_run", "\(messages.count) message(s) would be sent to \(name) again") }
        let queued = try await webhooks.replay(endpoint: name, sequences: messages.map(\.sequence), nowMs: now())
        if queued < messages.count {
            return ActionOutcome("done", "queued \(queued) of \(messages.count) message(s); the others' lane has an attempt in flight: send again once it is answered")
        }
        return ActionOutcome("done", "queued \(queued) message(s) for \(name)")
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
