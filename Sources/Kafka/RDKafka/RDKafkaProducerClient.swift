import CRdKafka
import Dispatch

/// The producer's librdkafka handle and every call made on it. The handle never leaves this type.
///
/// Delivery reports are served by the client's worker whenever it has no job: `rd_kafka_poll`
/// blocks up to 100 ms and wakes as soon as a report is queued, so a report reaches its waiter at
/// once. Jobs (the cluster probe, the closing flush) interrupt that wait through `rd_kafka_yield`.
final class RDKafkaProducerClient: Sendable {
    nonisolated(unsafe) private let handle: OpaquePointer
    private let worker: ClientWorker

    init(properties: [String: String]) throws(KafkaError) {
        let handle = try RDKafkaConfig.makeHandle(type: RD_KAFKA_PRODUCER, properties: properties) { conf in
            rd_kafka_conf_set_dr_msg_cb(conf, deliveryReportCallback)
        }
        self.handle = handle
        // The worker ends (stop in deinit) before the handle is destroyed, so these never outlive it.
        nonisolated(unsafe) let rk = handle
        worker = ClientWorker(name: "kafka-producer", idle: { _ = rd_kafka_poll(rk, 100) }, wake: { rd_kafka_yield(rk) })
    }

    deinit {
        worker.stop()
        rd_kafka_destroy(handle)
    }

    /// Hands one record to librdkafka (never blocks: librdkafka queues it). nil when taken, and then
    /// `receiver` gets the record's delivery report on the worker; the error when refused, and then no
    /// report will come.
    func produce(_ message: KafkaMessage, receiver: DeliveryReceiver) -> KafkaError? {
        // Retained until the report's callback takes it back.
        let opaque = Unmanaged.passRetained(receiver).toOpaque()
        let refusal = enqueue(message, opaque: opaque)
        if refusal != nil { Unmanaged<DeliveryReceiver>.fromOpaque(opaque).release() }
        return refusal
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
                    return rd_kafka_produceva(handle, &args, args.count)
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

    /// The producer's fatal error (idempotence broken), after which nothing more can be produced.
    var fatalError: String? {
        var text = [CChar](repeating: 0, count: 512)
        let code = rd_kafka_fatal_error(handle, &text, text.count)
        return code == RD_KAFKA_RESP_ERR_NO_ERROR ? nil : cString(text)
    }

    /// Whether a metadata request succeeds within the timeout. Delivery reports wait meanwhile, at
    /// most `timeoutMs` and only while the cluster does not answer.
    func isClusterReachable(timeoutMs: Int32) async -> Bool {
        await worker.run(whenStopped: false) { [self] in
            var metadata: UnsafePointer<rd_kafka_metadata>?
            let err = rd_kafka_metadata(handle, 0, nil, &metadata, timeoutMs)
            if let metadata { rd_kafka_metadata_destroy(metadata) }
            return err == RD_KAFKA_RESP_ERR_NO_ERROR
        }
    }

    /// One metadata request per topic, so the first records to them need not wait for it (librdkafka
    /// keeps the answers). The first topic without metadata within `timeoutMs` is the error; a stopped
    /// client is `closed`.
    func fetchMetadata(topics: [String], timeoutMs: Int32) async -> KafkaError? {
        let deadline = ContinuousClock.now + .milliseconds(Int64(timeoutMs))
        for topic in topics {
            let left = deadline - ContinuousClock.now
            let leftMs = max(1, Int32(clamping: left.components.seconds * 1_000 + left.components.attoseconds / 1_000_000_000_000_000))
            if let error = await sliced(timeoutMs: leftMs, { [self] wait in topicMetadata(topic, timeoutMs: wait) }) { return error }
        }
        return nil
    }

    /// Runs `request` on the worker, each attempt waiting at most `slice` ms and tried again while it
    /// times out and `timeoutMs` is not over: delivery reports (and the spooling of deliveries Kafka does
    /// not take) are served between two attempts, even while every broker is down. (A cluster slower to
    /// answer than `slice` then never completes the warm-up, which only gates readiness while it runs.)
    private func sliced(timeoutMs: Int32, slice: Int32 = 250, _ request: @escaping @Sendable (Int32) -> KafkaError?) async -> KafkaError? {
        let deadline = ContinuousClock.now + .milliseconds(Int64(timeoutMs))
        while true {
            let left = deadline - ContinuousClock.now
            let wait = min(slice, max(1, Int32(clamping: left.components.seconds * 1_000 + left.components.attoseconds / 1_000_000_000_000_000)))
            let error = await worker.run(whenStopped: KafkaError(kind: .closed, message: "the producer is closed")) { request(wait) }
            guard let error else { return nil }
            guard case .broker(let code, _) = error.kind, code == RD_KAFKA_RESP_ERR__TIMED_OUT.rawValue, ContinuousClock.now < deadline else {
                return error
            }
        }
    }

    private func topicMetadata(_ topic: String, timeoutMs: Int32) -> KafkaError? {
        guard let topicHandle = rd_kafka_topic_new(handle, topic, nil) else {
            return KafkaError(kind: .configuration, message: "rd_kafka_topic_new failed for \(topic)")
        }
        defer { rd_kafka_topic_destroy(topicHandle) }
        var metadata: UnsafePointer<rd_kafka_metadata>?
        let err = rd_kafka_metadata(handle, 0, topicHandle, &metadata, timeoutMs)
        defer { if let metadata { rd_kafka_metadata_destroy(metadata) } }
        guard err == RD_KAFKA_RESP_ERR_NO_ERROR, let metadata else { return KafkaError(code: err, context: "metadata of \(topic)") }
        if metadata.pointee.topic_cnt > 0, metadata.pointee.topics[0].err != RD_KAFKA_RESP_ERR_NO_ERROR {
            return KafkaError(code: metadata.pointee.topics[0].err, context: "metadata of \(topic)")
        }
        return nil
    }

    /// Flushes for up to `flushTimeoutMs`, purges what is left and serves every delivery report,
    /// purged ones included (so each waiter resumes with a result), then stops the worker.
    func close(flushTimeoutMs: Int32) async {
        await worker.run(whenStopped: ()) { [self] in drain(flushTimeoutMs: flushTimeoutMs) }
        worker.stop()
    }

    /// `close` for callers that cannot await (a `defer`, `deinit`): blocks the calling thread.
    func closeBlocking(flushTimeoutMs: Int32) {
        if worker.isCurrent {
            drain(flushTimeoutMs: flushTimeoutMs)
        } else {
            let done = DispatchSemaphore(value: 0)
            if worker.submit({ [self] in drain(flushTimeoutMs: flushTimeoutMs); done.signal() }) { done.wait() }
        }
        worker.stop()
    }

    private func drain(flushTimeoutMs: Int32) {
        _ = rd_kafka_flush(handle, flushTimeoutMs)
        _ = rd_kafka_purge(handle, Int32(RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT))
        var rounds = 0
        while rd_kafka_outq_len(handle) > 0, rounds < 300 {
            _ = rd_kafka_poll(handle, 100)
            rounds += 1
        }
        if rd_kafka_outq_len(handle) > 0 {
            librdkafkaLogger.error("producer closed with records whose delivery reports never came",
                                   metadata: ["records": .stringConvertible(rd_kafka_outq_len(handle))])
        }
    }
}

private func withOptionalBytes<R>(_ bytes: [UInt8]?, _ body: (UnsafeRawBufferPointer?) -> R) -> R {
    guard let bytes else { return body(nil) }
    return bytes.withUnsafeBytes { body($0) }
}

/// Receives one record's delivery report; carried through librdkafka's per-message opaque pointer.
class DeliveryReceiver {
    func delivered(_ result: Result<KafkaDelivery, KafkaError>) {}
}

/// Runs on the producer client's worker (inside `rd_kafka_poll` or the closing flush) for each record's report.
private let deliveryReportCallback: @convention(c) (OpaquePointer?, UnsafePointer<rd_kafka_message_t>?, UnsafeMutableRawPointer?) -> Void = { _, message, _ in
    guard let message, let opaque = message.pointee._private else { return }
    let receiver = Unmanaged<DeliveryReceiver>.fromOpaque(opaque).takeRetainedValue()
    let topic = message.pointee.rkt.map { String(cString: rd_kafka_topic_name($0)) } ?? ""
    if message.pointee.err == RD_KAFKA_RESP_ERR_NO_ERROR {
        receiver.delivered(.success(KafkaDelivery(topic: topic, partition: message.pointee.partition, offset: message.pointee.offset)))
    } else {
        receiver.delivered(.failure(KafkaError(code: message.pointee.err, context: "delivery to \(topic)")))
    }
}
