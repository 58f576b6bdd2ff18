import Entitlements
import Events
import Kafka
import Logging
import Merchant
import Store

/// Decodes, enriches and applies a batch of event records: the work shared by the events consumer,
/// the retry consumer and the benchmark. The rules (what an event changes, how a batch is applied)
/// are the Entitlements module's; this turns records into their input and outcomes into dispositions.
struct EventProcessor: Sendable {
    enum Disposition: Sendable, Equatable {
        case done(ApplyOutcome)
        case failed(WorkerFailure)
    }

    let store: EntitlementStore
    let enricher: (any PurchaseEnricher)?
    /// Queues the answers to Apple's consumption requests with the event; nil when no app's policy is on.
    var consumption: ConsumptionAnswerer? = nil
    /// Queues the answers to Google's refund reviews with the event; nil when no package has a policy.
    var refundReviews: RefundReviewAnswerer? = nil

    /// Gives a checkout provider's events the user and product of the checkout they pay, and their
    /// checkout step (nil: no checkouts).
    var checkouts: CheckoutMatcher? = nil
    let metrics: WorkerMetrics
    let logger: Logger
    var now: @Sendable () -> Int64 = { Timestamp.now.millisecondsSince1970 }
    /// Records each applied event with the entitlements it touched, in the batch's transaction (outbound webhooks).
    var appliedEvents: (any AppliedEventRecorder)? = nil
    /// Whether each purchase's history is kept (`purchase_history`, for the operator console).
    var keepsHistory = false
    /// Told the events each committed batch processed: the requests of this process waiting for them answer.
    var processedEvents: ProcessedEvents? = nil
    /// Each app's `purchases.ownership`: who keeps a purchase another user reports.
    var ownership: @Sendable (String) -> OwnershipPolicy = { _ in .transfer }

    /// A batch decoded and enriched, its changes ready for the store.
    struct Prepared: Sendable {
        let records: [KafkaRecord]
        fileprivate var dispositions: [Disposition?]
        fileprivate var changes: [(index: Int, change: PurchaseChange)]
        /// Held-back events for their purchases' stories (the console's), written beside the batch.
        fileprivate var unconfirmed: [UnconfirmedEventNote] = []
    }

    /// An Apple notification naming an account token Tollgate made and set at Apple names that token's user
    /// instead, whether or not the app still sets them. Only a made token's shape (a version 8 UUID) is looked
    /// up. (A reported purchase names its user itself.)
    func withAccountTokenUser(_ event: NormalizedEvent) async throws(WorkerFailure) -> NormalizedEvent {
        guard !event.isReportedPurchase, Projector.sourceName(of: event) == SourceName.apple.rawValue, let token = event.user,
              AppAccountTokens.isMade(token) else { return event }
        let holder: String?
        do { holder = try await AppAccountTokens.user(named: token, app: event.app, store: store) } catch {
            throw WorkerFailure(.storeUnavailable, message: "\(error)", isTransient: error.isTransient)
        }
        guard let user = holder else { return event }
        var named = event
        named.user = user
        return named
    }

    /// Decodes and enriches, reading only: everything before the store, so it can run while the store
    /// applies the previous batch. What merchant features write with an event travels with its change
    /// as `ProjectionStep`s, applied in the batch's transaction.
    func prepare(_ records: [KafkaRecord]) async -> Prepared {
        var prepared = Prepared(records: records, dispositions: Array(repeating: nil, count: records.count), changes: [])
        for (index, decoded) in await Self.decodeAll(records).enumerated() {
            var event: NormalizedEvent
            switch decoded {
            case .success(let decodedEvent): event = decodedEvent
            case .failure(let error):
                prepared.dispositions[index] = .failed(error)
                continue
            }
            do {
                event = try await withAccountTokenUser(event)
                // What merchant features write with the event, in the batch's transaction.
                var steps: [any ProjectionStep] = []
                if let step = try consumption?.step(for: event) { steps.append(step) }
                if let step = refundReviews?.step(for: event) { steps.append(step) }
                if let matched = try await checkouts?.match(event) {
                    event = matched.event
                    if let step = matched.step { steps.append(step) }
                }
                let snapshot: PurchaseSnapshot?
                switch try await enricher?.enrich(event) ?? .asSent {
                case .asSent: snapshot = nil
                case .state(let reported): snapshot = reported
                case .unconfirmed(let reported):
                    // A forged (or stale) notification: whoever holds one valid push token can write any.
                    metrics.unconfirmed(type: event.type.rawValue)
                    logger.warning("the sender's API does not confirm this event: it changes nothing the API does not report",
                                   metadata: ["event_id": .string(event.id), "type": .string(event.type.rawValue)])
                    guard let reported else {
                        if keepsHistory {
                            // Nothing to apply (and none of the features' steps: the event is not believed), but the
                            // story shows it arrived and why it changed nothing.
                            let record = records[index]
                            prepared.unconfirmed.append(UnconfirmedEventNote(
                                event: event, key: Projector.purchaseKey(of: event),
                                position: .init(topic: record.topic, partition: record.partition, offset: record.offset)))
                        }
                        prepared.dispositions[index] = .done(.unchanged)
                        continue
                    }
                    snapshot = reported
                }
                if var change = Projector.change(for: event, snapshot: try await keepingEnvironment(snapshot, of: event),
                                                 ownership: ownership(event.app)) {
                    change.steps = steps
                    if appliedEvents != nil || keepsHistory { change.event = event }
                    if keepsHistory {
                        let record = records[index]
                        change.history = HistoryNote(position: .init(topic: record.topic, partition: record.partition, offset: record.offset),
                                                     orderId: snapshot?.orderId)
                    }
                    prepared.changes.append((index, change))
                } else if !steps.isEmpty {
                    prepared.changes.append((index, .stepsOnly(eventId: event.id, key: Projector.purchaseKey(of: event), steps: steps)))
                } else {
                    prepared.dispositions[index] = .done(.unchanged)
                }
            } catch {
                prepared.dispositions[index] = .failed(error)
            }
        }
        return prepared
    }

    /// A state the API reports without saying whether the purchase is a test one (a void, a purchase
    /// Google no longer keeps) applies to the purchase in the environment the store keeps it in: a
    /// license tester's void ends the sandbox purchase, not a production one of the same token.
    private func keepingEnvironment(_ snapshot: PurchaseSnapshot?, of event: NormalizedEvent) async throws(WorkerFailure) -> PurchaseSnapshot? {
        guard var snapshot, snapshot.environment == nil else { return snapshot }
        let kept: [String]
        do {
            kept = try await store.environments(source: Projector.sourceName(of: event), app: event.app, subject: event.subject)
        } catch {
            throw WorkerFailure.store(error)
        }
        if kept == [NormalizedEvent.Environment.sandbox.rawValue] { snapshot.environment = .sandbox }
        return snapshot
    }

    /// Applies a prepared batch: one disposition per record, in order.
    func apply(_ prepared: Prepared) async -> [Disposition] {
        var dispositions = prepared.dispositions
        let changes = prepared.changes
        if !prepared.unconfirmed.isEmpty { await store.noteUnconfirmed(prepared.unconfirmed, nowMs: now()) }
        var processed: [String] = []
        for (index, outcome) in await apply(changes.map(\.change)).enumerated() {
            dispositions[changes[index].index] = outcome
            if case .done = outcome { processed.append(changes[index].change.eventId) }
        }
        // Committed: the requests of this process waiting for these events answer now.
        if !processed.isEmpty { processedEvents?.processed(processed) }
        return dispositions.map { $0 ?? .failed(WorkerFailure(.internalError, message: "no outcome", isTransient: true)) }
    }

    private func apply(_ changes: [PurchaseChange]) async -> [Disposition] {
        await store.applyIsolatingRejections(changes, nowMs: now(), recorder: appliedEvents).map { result in
            switch result {
            case .success(let outcome): .done(outcome)
            case .failure(let error): .failed(WorkerFailure.store(error))
            }
        }
    }

    /// Records decoded per batch in two halves side by side: JSON decoding is the projection's largest
    /// CPU cost, and the store's thread waits on it otherwise.
    static func decodeAll(_ records: [KafkaRecord]) async -> [Result<NormalizedEvent, WorkerFailure>] {
        guard records.count >= 64 else { return decodeSlice(records[...]) }
        let middle = records.count / 2
        return await withTaskGroup(of: (Int, [Result<NormalizedEvent, WorkerFailure>]).self) { group in
            group.addTask { (0, decodeSlice(records[..<middle])) }
            group.addTask { (1, decodeSlice(records[middle...])) }
            var halves: [[Result<NormalizedEvent, WorkerFailure>]] = [[], []]
            for await (half, results) in group { halves[half] = results }
            return halves[0] + halves[1]
        }
    }

    private static func decodeSlice(_ records: ArraySlice<KafkaRecord>) -> [Result<NormalizedEvent, WorkerFailure>] {
        records.map { record in Result { () throws(WorkerFailure) -> NormalizedEvent in try decode(record) } }
    }

    /// A CloudEvents 1.0 record whose value is a normalized event this version understands.
    static func decode(_ record: KafkaRecord) throws(WorkerFailure) -> NormalizedEvent {
        if let version = record.headers.string(CloudEventHeaders.specVersion), version != "1.0" {
            throw .unsupportedVersion("ce_specversion \(version) is not supported (expected 1.0)")
        }
        do {
            return try EventCoding.decode(record.value)
        } catch {
            throw .undecodable("the value is not a normalized event: \(error)")
        }
    }
}
