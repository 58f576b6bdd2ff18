import CRdKafka
import Dispatch
import Logging
import Synchronization

/// An idempotent producer (`acks=all`) whose `send` returns once the record's delivery report
/// arrives: when it returns, the record is durable on the cluster.
public final class KafkaProducer: Sendable {
    private let handle: RDKafkaHandle
    private let poller: PollThread
    /// Guards the open/closed transition: records are handed to librdkafka under it, so none can
    /// slip in after `close` has flushed.
    private let closed = Mutex(false)
    public let config: ProducerConfig

    public init(config: ProducerConfig) throws(KafkaError) {
        self.config = config
        let handle = try RDKafkaHandle(type: RD_KAFKA_PRODUCER, properties: config.properties) { conf in
            rd_kafka_conf_set_dr_msg_cb(conf, deliveryReportCallback)
        }
        self.handle = handle
        // Serves delivery reports: rd_kafka_poll wakes as soon as one is queued.
        self.poller = PollThread(name: "kafka-producer-poll") { _ = rd_kafka_poll(handle.pointer, 100) }
    }

    deinit { shutDown(flushTimeoutMs: 0) }

    /// Produces one record and waits for its delivery report.
    @discardableResult
    public func send(_ message: KafkaMessage) async throws(KafkaError) -> KafkaDelivery {
        try await deliver(message).get()
    }

    /// The delivery report of one record, as a value.
    private func deliver(_ message: KafkaMessage) async -> Result<KafkaDelivery, KafkaError> {
        await withCheckedContinuation { continuation in
            let box = Unmanaged.passRetained(DeliveryBox(continuation))
            let refusal: KafkaError? = closed.withLock { isClosed in
                if isClosed { return KafkaError(kind: .closed, message: "producer is closed") }
                return enqueue(message, opaque: box.toOpaque())
            }
            if let refusal {
                // librdkafka did not take the record: no delivery report will come.
                box.release()
                continuation.resume(returning: .failure(refusal))
            }
        }
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
    public func sendEach(_ messages: [KafkaMessage]) async -> [Result<KafkaDelivery, KafkaError>] {
        guard !messages.isEmpty else { return [] }
        return await withCheckedContinuation { continuation in
            let batch = DeliveryBatch(count: messages.count, continuation: continuation)
            for (index, message) in messages.enumerated() {
                let box = Unmanaged.passRetained(DeliveryBox(batch: batch, index: index))
                let refusal: KafkaError? = closed.withLock { isClosed in
                    if isClosed { return KafkaError(kind: .closed, message: "producer is closed") }
                    return enqueue(message, opaque: box.toOpaque())
                }
                if let refusal {
                    box.release()
                    batch.complete(index, .failure(refusal))
                }
            }
        }
    }

    /// Waits up to `timeoutMs` for outstanding records; returns false if some remain.
    public func flush(timeoutMs: Int32) -> Bool {
        rd_kafka_flush(handle.pointer, timeoutMs) == RD_KAFKA_RESP_ERR_NO_ERROR
    }

    /// Records handed to librdkafka and not yet acknowledged.
    public var outstanding: Int32 { rd_kafka_outq_len(handle.pointer) }

    /// Set when the idempotent producer hit a fatal error: it cannot produce again and must be
    /// replaced (the process restarted); readiness reports it.
    public var fatalError: String? { handle.fatalError }

    /// Flushes, fails whatever is still outstanding (its senders get an error, never silence) and
    /// stops the poll thread. Safe to call more than once.
    public func close(flushTimeoutMs: Int32 = 5_000) {
        shutDown(flushTimeoutMs: flushTimeoutMs)
    }

    private func shutDown(flushTimeoutMs: Int32) {
        let wasClosed = closed.withLock { value in
            defer { value = true }
            return value
        }
        guard !wasClosed else { return }
        _ = rd_kafka_flush(handle.pointer, flushTimeoutMs)
        poller.stop()
        _ = rd_kafka_purge(handle.pointer, Int32(RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT))
        // Serve every delivery report, purged ones included, so each waiting `send` resumes.
        var rounds = 0
        while rd_kafka_outq_len(handle.pointer) > 0, rounds < 300 {
            _ = rd_kafka_poll(handle.pointer, 100)
            rounds += 1
        }
        if rd_kafka_outq_len(handle.pointer) > 0 {
            librdkafkaLogger.error("producer closed with records whose delivery reports never came",
                                   metadata: ["records": .stringConvertible(rd_kafka_outq_len(handle.pointer))])
        }
    }

    fileprivate func metadataProbe(timeoutMs: Int32) -> Bool {
        if closed.withLock({ $0 }) { return false }
        var metadata: UnsafePointer<rd_kafka_metadata>?
        let err = rd_kafka_metadata(handle.pointer, 0, nil, &metadata, timeoutMs)
        if let metadata { rd_kafka_metadata_destroy(metadata) }
        return err == RD_KAFKA_RESP_ERR_NO_ERROR
    }

    /// One metadata request per topic: librdkafka keeps the answers, so the first records to these
    /// topics need not wait for them. Throws for the first topic without metadata.
    fileprivate func topicMetadataProbe(_ topics: [String], timeoutMs: Int32) throws(KafkaError) {
        for topic in topics {
            if closed.withLock({ $0 }) { throw KafkaError(kind: .closed, message: "the producer is closed") }
            guard let topicHandle = rd_kafka_topic_new(handle.pointer, topic, nil) else {
                throw KafkaError(kind: .configuration, message: "rd_kafka_topic_new failed for \(topic)")
            }
            defer { rd_kafka_topic_destroy(topicHandle) }
            var metadata: UnsafePointer<rd_kafka_metadata>?
            let err = rd_kafka_metadata(handle.pointer, 0, topicHandle, &metadata, timeoutMs)
            defer { if let metadata { rd_kafka_metadata_destroy(metadata) } }
            guard err == RD_KAFKA_RESP_ERR_NO_ERROR, let metadata else { throw KafkaError(code: err, context: "metadata of \(topic)") }
            if metadata.pointee.topic_cnt > 0, metadata.pointee.topics[0].err != RD_KAFKA_RESP_ERR_NO_ERROR {
                throw KafkaError(code: metadata.pointee.topics[0].err, context: "metadata of \(topic)")
            }
        }
    }

    private func enqueue(_ message: KafkaMessage, opaque: UnsafeMutableRawPointer) -> KafkaError? {
        guard let headers = rd_kafka_headers_new(message.headers.count) else {
            return KafkaError(kind: .configuration, message: "rd_kafka_headers_new failed")
        }
        for header in message.headers {
            if let value = header.value {
                value.withUnsafeBytes { bytes in
                    _ = rd_kafka_header_add(headers, header.name, -1, bytes.baseAddress, bytes.count)
                }
            } else {
                _ = rd_kafka_header_add(headers, header.name, -1, nil, 0)
            }
        }
        let error: OpaquePointer? = message.topic.withCString { topic in
            message.value.withUnsafeBytes { value in
                withOptionalBytes(message.key) { key in
                    var args = [rd_kafka_vu_t](repeating: rd_kafka_vu_t(), count: message.partition == nil ? 6 : 7)
                    args[0].vtype = RD_KAFKA_VTYPE_TOPIC
                    args[0].u.cstr = topic
                    args[1].vtype = RD_KAFKA_VTYPE_VALUE
                    args[1].u.mem.ptr = UnsafeMutableRawPointer(mutating: value.baseAddress)
                    args[1].u.mem.size = value.count
                    args[2].vtype = RD_KAFKA_VTYPE_KEY
                    args[2].u.mem.ptr = UnsafeMutableRawPointer(mutating: key?.baseAddress)
                    args[2].u.mem.size = key?.count ?? 0
                    args[3].vtype = RD_KAFKA_VTYPE_HEADERS
                    args[3].u.headers = headers
                    args[4].vtype = RD_KAFKA_VTYPE_OPAQUE
                    args[4].u.ptr = opaque
                    // F_COPY: librdkafka copies key and value, so these buffers may go after the call.
                    args[5].vtype = RD_KAFKA_VTYPE_MSGFLAGS
                    args[5].u.i = RD_KAFKA_MSG_F_COPY
                    if let partition = message.partition {
                        args[6].vtype = RD_KAFKA_VTYPE_PARTITION
                        args[6].u.i32 = partition
                    }
                    return rd_kafka_produceva(handle.pointer, &args, args.count)
                }
            }
        }
        guard let error else { return nil }
        // On failure the headers were not taken over by librdkafka.
        rd_kafka_headers_destroy(headers)
        let code = rd_kafka_error_code(error)
        let text = String(cString: rd_kafka_error_string(error))
        rd_kafka_error_destroy(error)
        return KafkaError(kind: .broker(code: code.rawValue, name: String(cString: rd_kafka_err2name(code))),
                          message: "produce to \(message.topic): \(text)")
    }
}

extension KafkaProducer {
    /// `close` on a dispatch thread: the flush blocks for up to its timeout, and the executor's threads
    /// also serve the HTTP connections.
    public func drainAndClose(flushTimeoutMs: Int32) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            DispatchQueue.global().async { [self] in
                close(flushTimeoutMs: flushTimeoutMs)
                continuation.resume()
            }
        }
    }

    /// Fetches `topics`' metadata ahead of the first records to them (`topicMetadataProbe`), off the executor.
    public func fetchMetadata(topics: [String], timeoutMs: Int32) async throws(KafkaError) {
        let result: Result<Void, KafkaError> = await withCheckedContinuation { continuation in
            DispatchQueue.global().async { [self] in
                continuation.resume(returning: Result { () throws(KafkaError) in try topicMetadataProbe(topics, timeoutMs: timeoutMs) })
            }
        }
        try result.get()
    }

    /// Whether a metadata request to the cluster succeeds within the timeout.
    public func isClusterReachable(timeoutMs: Int32) async -> Bool {
        await withCheckedContinuation { continuation in
            DispatchQueue.global().async { [self] in
                continuation.resume(returning: metadataProbe(timeoutMs: timeoutMs))
            }
        }
    }
}

private func withOptionalBytes<R>(_ bytes: [UInt8]?, _ body: (UnsafeRawBufferPointer?) -> R) -> R {
    guard let bytes else { return body(nil) }
    return bytes.withUnsafeBytes { body($0) }
}

/// Carries one record's waiter through librdkafka's per-message opaque pointer: a `send`, or a slot
/// of a `sendAll` batch.
private final class DeliveryBox {
    private enum Waiter {
        case single(CheckedContinuation<Result<KafkaDelivery, KafkaError>, Never>)
        case batch(DeliveryBatch, Int)
    }
    private let waiter: Waiter

    init(_ continuation: CheckedContinuation<Result<KafkaDelivery, KafkaError>, Never>) { waiter = .single(continuation) }
    init(batch: DeliveryBatch, index: Int) { waiter = .batch(batch, index) }

    func complete(_ result: Result<KafkaDelivery, KafkaError>) {
        switch waiter {
        case .single(let continuation): continuation.resume(returning: result)
        case .batch(let batch, let index): batch.complete(index, result)
        }
    }
}

/// The reports of a `sendAll` batch; resumes its caller when the last one arrives.
private final class DeliveryBatch: Sendable {
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

private let deliveryReportCallback: @convention(c) (OpaquePointer?, UnsafePointer<rd_kafka_message_t>?, UnsafeMutableRawPointer?) -> Void = { _, message, _ in
    guard let message, let opaque = message.pointee._private else { return }
    let box = Unmanaged<DeliveryBox>.fromOpaque(opaque).takeRetainedValue()
    let topic = message.pointee.rkt.map { String(cString: rd_kafka_topic_name($0)) } ?? ""
    if message.pointee.err == RD_KAFKA_RESP_ERR_NO_ERROR {
        box.complete(.success(KafkaDelivery(topic: topic, partition: message.pointee.partition, offset: message.pointee.offset)))
    } else {
        box.complete(.failure(KafkaError(code: message.pointee.err, context: "delivery to \(topic)")))
    }
}
