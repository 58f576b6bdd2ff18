import CRdKafka
import Logging

/// Owns one `rd_kafka_t`. librdkafka handles are thread-safe, so the pointer alone is
/// `nonisolated(unsafe)`; code captures this wrapper, never the raw pointer, and the handle is
/// destroyed only when the last capture is gone, so no call can reach a freed handle.
final class RDKafkaHandle: Sendable {
    nonisolated(unsafe) let pointer: OpaquePointer

    /// Builds the configuration and the handle; `configure` may add callbacks before creation.
    init(type: rd_kafka_type_t, properties: [String: String], configure: (OpaquePointer) -> Void = { _ in }) throws(KafkaError) {
        guard let conf = rd_kafka_conf_new() else {
            throw KafkaError(kind: .configuration, message: "rd_kafka_conf_new failed")
        }
        var errorText = [CChar](repeating: 0, count: 512)
        for (key, value) in properties.sorted(by: { $0.key < $1.key }) {
            if rd_kafka_conf_set(conf, key, value, &errorText, errorText.count) != RD_KAFKA_CONF_OK {
                rd_kafka_conf_destroy(conf)
                throw KafkaError(kind: .configuration, message: "kafka property \(key): \(cString(errorText))")
            }
        }
        rd_kafka_conf_set_log_cb(conf, forwardLibrdkafkaLog)
        rd_kafka_conf_set_error_cb(conf, forwardLibrdkafkaError)
        configure(conf)
        guard let handle = rd_kafka_new(type, conf, &errorText, errorText.count) else {
            rd_kafka_conf_destroy(conf)
            throw KafkaError(kind: .configuration, message: cString(errorText))
        }
        self.pointer = handle
    }

    deinit {
        rd_kafka_destroy(pointer)
    }

    /// The producer's fatal error (idempotence broken), after which nothing more can be produced.
    var fatalError: String? {
        var text = [CChar](repeating: 0, count: 512)
        let code = rd_kafka_fatal_error(pointer, &text, text.count)
        return code == RD_KAFKA_RESP_ERR_NO_ERROR ? nil : cString(text)
    }
}

let librdkafkaLogger = Logger(label: "librdkafka")

/// librdkafka's own log lines, re-emitted through swift-log so they share the process's format.
private let forwardLibrdkafkaLog: @convention(c) (OpaquePointer?, Int32, UnsafePointer<CChar>?, UnsafePointer<CChar>?) -> Void = { _, level, facility, text in
    let facility = facility.map { String(cString: $0) } ?? ""
    let text = text.map { String(cString: $0) } ?? ""
    let swiftLevel: Logger.Level
    switch level {
    // librdkafka logs connection failures at 3 (LOG_ERR) although it retries them itself.
    case ...2: swiftLevel = .error
    case 3, 4: swiftLevel = .warning
    case 5, 6: swiftLevel = .info
    default: swiftLevel = .debug
    }
    librdkafkaLogger.log(level: swiftLevel, "\(text)", metadata: ["facility": .string(facility)])
}

/// Client-level errors (broker down, connection refused) are retried inside librdkafka;
/// only fatal ones need a person, so the rest are warnings.
private let forwardLibrdkafkaError: @convention(c) (OpaquePointer?, Int32, UnsafePointer<CChar>?, UnsafeMutableRawPointer?) -> Void = { _, code, reason, _ in
    let reason = reason.map { String(cString: $0) } ?? ""
    let fatal = code == RD_KAFKA_RESP_ERR__FATAL.rawValue
    librdkafkaLogger.log(level: fatal ? .error : .warning, "\(reason)", metadata: ["code": .stringConvertible(code)])
}

/// The text of a NUL-terminated error buffer filled by librdkafka.
func cString(_ buffer: [CChar]) -> String {
    String(decoding: buffer.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
}
