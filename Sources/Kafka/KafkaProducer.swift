import ServiceLifecycle
import Synchronization

/// An idempotent producer (`acks=all`) whose `send` returns once the record's delivery report
/// arrives: when it returns, the record is durable on the cluster.
///
/// A swift-service-lifecycle `Service`: run it in the process's service group, before the services
/// that produce through it, and on graceful shutdown it flushes what is in flight and closes.
public final class KafkaProducer: Sendable, Service {
    private let client: RDKafkaProducerClient
    /// Guards the open/closed transition: records are handed to librdkafka under it, so none can
    /// slip in after `close` has flushed.
    private let closed = Mutex(false)
    public let config: ProducerConfig

    public init(config: ProducerConfig) throws(KafkaError) {
        self.config = config
        client = try RDKafkaProducerClient(properties: config.properties)
    }

    deinit {
        if markClosed() { client.closeBlocking(flushTimeoutMs: 0) }
    }

    /// Produces one record and waits for its delivery report.
    @discardableResult
    public func send(_ message: KafkaMessage) async throws(KafkaError) -> KafkaDelivery {
        try await sendEach([message])[0].get()
    }

    /// Hands every record to librdkafka in order, then waits for all delivery reports; throws the first
    /// failure. In order matters: records of one key keep their order on their partition (idempotence
    /// keeps it through retries), so a compacted topic ends with the last state.
    @discardableResult
    public func sendAll(_ messages: [KafkaMessage]) async throws(KafkaError) -> [KafkaDelivery] {
        var deliveries: [KafkaDelivery] = []
        for result in await sendEach(messages) { deliveries.append(try result.get()) }
        return deliveries
    }

    /// Like `sendAll`, but reports each record's outcome, so a caller can keep just the failed ones.
    /// Every send goes through here: one waiter per call, resumed by the last of its reports.
    public func sendEach(_ messages: [KafkaMessage]) async -> [Result<KafkaDelivery, KafkaError>] {
        guard !messages.isEmpty else { return [] }
        return await withCheckedContinuation { continuation in
            let waiter = DeliveryWaiter(count: messages.count, continuation: continuation)
            let logGuard = config.client.mockLogGuard
            // Once the embedded broker refuses a record of a topic, the call's later records of that topic
            // are refused too, so none overtakes it.
            var refused: [String: KafkaError] = [:]
            for (index, message) in messages.enumerated() {
                let refusal: KafkaError? = closed.withLock { isClosed in
                    if isClosed { return KafkaError(kind: .closed, message: "producer is closed") }
                    var reserved: MockLogGuard.Reserved?
                    if let logGuard {
                        if let earlier = refused[message.topic] { return earlier }
                        switch logGuard.reserve(message) {
                        case .notGuarded: break
                        case .taken(let room): reserved = room
                        case .refused(let error):
                            refused[message.topic] = error
                            return error
                        }
                    }
                    let notTaken = client.produce(message, receiver: DeliverySlot(waiter: waiter, index: index, reserved: reserved))
                    if let notTaken { reserved?.release(.failure(notTaken)) }
                    return notTaken
                }
                // Not taken: no delivery report will come.
                if let refusal { waiter.complete(index, .failure(refusal)) }
            }
        }
    }

    /// Set when the idempotent producer hit a fatal error: it cannot produce again and must be
    /// replaced (the process restarted); readiness reports it.
    public var fatalError: String? { client.fatalError }

    /// Whether a metadata request to the cluster succeeds within the timeout.
    public func isClusterReachable(timeoutMs: Int32) async -> Bool {
        if closed.withLock({ $0 }) { return false }
        return await client.isClusterReachable(timeoutMs: timeoutMs)
    }

    /// Fetches `topics`' metadata ahead of the first records to them (readiness warms the gateway so),
    /// on the producer's worker.
    public func fetchMetadata(topics: [String], timeoutMs: Int32) async throws(KafkaError) {
        if closed.withLock({ $0 }) { throw KafkaError(kind: .closed, message: "the producer is closed") }
        if let error = await client.fetchMetadata(topics: topics, timeoutMs: timeoutMs) { throw error }
    }

    /// Waits for graceful shutdown, then `drainAndClose` with `config.shutdownFlushTimeoutMs`. Listed
    /// before the HTTP server in a service group, it shuts down after it: in-flight requests still publish.
    public func run() async throws {
        try? await gracefulShutdown()
        await drainAndClose(flushTimeoutMs: config.shutdownFlushTimeoutMs)
    }

    /// Flushes for up to `flushTimeoutMs`, fails whatever is still outstanding (its senders get an
    /// error, never silence) and stops the client's worker. Safe to call more than once.
    public func drainAndClose(flushTimeoutMs: Int32) async {
        guard markClosed() else { return }
        await client.close(flushTimeoutMs: flushTimeoutMs)
    }

    /// `drainAndClose` for callers that cannot await (a `defer` in a test): blocks the calling thread.
    public func close(flushTimeoutMs: Int32 = 5_000) {
        guard markClosed() else { return }
        client.closeBlocking(flushTimeoutMs: flushTimeoutMs)
    }

    /// True for the one call that closed the producer.
    private func markClosed() -> Bool {
        closed.withLock { value in
            defer { value = true }
            return !value
        }
    }
}

/// One record's place in its `sendEach` call.
private final class DeliverySlot: DeliveryReceiver {
    let waiter: DeliveryWaiter
    let index: Int
    /// The room the mock log guard keeps for the record until its report.
    let reserved: MockLogGuard.Reserved?

    init(waiter: DeliveryWaiter, index: Int, reserved: MockLogGuard.Reserved?) {
        self.waiter = waiter
        self.index = index
        self.reserved = reserved
    }

    override func delivered(_ result: Result<KafkaDelivery, KafkaError>) {
        reserved?.release(result)
        waiter.complete(index, result)
    }
}

/// The reports of one `sendEach` call; resumes its caller when the last one arrives.
private final class DeliveryWaiter: Sendable {
    private struct State {
        var remaining: Int
        var results: [Result<KafkaDelivery, KafkaError>?]
    }
    private let state: Mutex<State>
    private let continuation: CheckedContinuation<[Result<KafkaDelivery, KafkaError>], Never>

    init(count: Int, continuation: CheckedContinuation<[Result<KafkaDelivery, KafkaError>], Never>) {
        state = Mutex(State(remaining: count, results: Array(repeating: nil, count: count)))
        self.continuation = continuation
    }

    func complete(_ index: Int, _ result: Result<KafkaDelivery, KafkaError>) {
        let finished: [Result<KafkaDelivery, KafkaError>]? = state.withLock { state in
            state.results[index] = result
            state.remaining -= 1
            guard state.remaining == 0 else { return nil }
            return state.results.map { $0 ?? .failure(KafkaError(kind: .closed, message: "no delivery report")) }
        }
        if let finished { continuation.resume(returning: finished) }
    }
}
