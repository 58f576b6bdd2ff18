import CRdKafka
import Logging

/// Builds a librdkafka configuration and creates a handle from it. Only the client types call it
/// (`RDKafkaProducerClient`, `RDKafkaConsumerClient`, `RDKafkaAdminClient`, `MockCluster`), and
/// each keeps the handle it gets private and destroys it in its `deinit`.
enum RDKafkaConfig {
    /// `configure` may add callbacks before creation. The caller owns the returned handle.
    static func makeHandle(type: rd_kafka_type_t, properties: [String: String],
                           configure: (OpaquePointer) -> Void = { _ in }) throws(KafkaError) -> OpaquePointer {
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
        return handle
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

extension KafkaError {
    /// An `rd_kafka_error_t` (which this destroys) as a KafkaError; `.timedOut` for librdkafka's timeout.
    init(taking error: OpaquePointer, context: String) {
        let code = rd_kafka_error_code(error)
        let text = String(cString: rd_kafka_error_string(error))
        rd_kafka_error_destroy(error)
        if code == RD_KAFKA_RESP_ERR__TIMED_OUT {
            self.init(kind: .timedOut, message: "\(context): \(text)")
        } else {
            self.init(kind: .broker(code: code.rawValue, name: String(cString: rd_kafka_err2name(code))), message: "\(context): \(text)")
        }
    }
}
