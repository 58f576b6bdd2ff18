import CRdKafka

/// An error from librdkafka or from this wrapper, with librdkafka's error code when there is one.
public struct KafkaError: Error, Sendable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        /// A librdkafka error code (`rd_kafka_resp_err_t`).
        case broker(code: Int32, name: String)
        /// A configuration property librdkafka refused.
        case configuration
        /// The client is closed.
        case closed
        /// An operation did not finish in time.
        case timedOut
        /// Not produced: the embedded broker's partition holds as much as it keeps of records its
        /// consumers have not committed (`MockLogGuard`).
        case embeddedBrokerFull
    }

    public let kind: Kind
    public let message: String

    public init(kind: Kind, message: String) {
        self.kind = kind
        self.message = message
    }

    init(code: rd_kafka_resp_err_t, context: String) {
        let name = String(cString: rd_kafka_err2name(code))
        let text = String(cString: rd_kafka_err2str(code))
        self.init(kind: .broker(code: code.rawValue, name: name), message: "\(context): \(text)")
    }

    /// True when the message was not delivered within `message.timeout.ms`.
    public var isDeliveryTimeout: Bool {
        if case .broker(let code, _) = kind { return code == RD_KAFKA_RESP_ERR__MSG_TIMED_OUT.rawValue }
        return false
    }

    /// True when the broker does not implement the request, e.g. DeleteRecords on librdkafka
    /// 2.0.2's mock cluster (`_UNSUPPORTED_FEATURE`).
    public var isUnsupported: Bool {
        guard case .broker(let code, _) = kind else { return false }
        return code == RD_KAFKA_RESP_ERR__UNSUPPORTED_FEATURE.rawValue || code == RD_KAFKA_RESP_ERR_UNSUPPORTED_VERSION.rawValue
    }

    public var description: String { message }
}
