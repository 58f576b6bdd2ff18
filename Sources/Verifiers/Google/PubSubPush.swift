import Rejections
import Toolkit
/// One Pub/Sub push (https://cloud.google.com/pubsub/docs/push), in either form a subscription
/// can use: wrapped, `{"message": {"data", "attributes", "messageId", "publishTime", ...},
/// "subscription", "deliveryAttempt"}`, or unwrapped (`noWrapper` with `writeMetadata`), where the
/// body is the message data itself and `x-goog-pubsub-*` headers carry the metadata.
struct PubSubPush: Sendable {
    var messageId: String
    var publishTime: String?
    /// `projects/<project>/subscriptions/<name>`: Pub/Sub names it in every push (the envelope's
    /// `subscription`, or `x-goog-pubsub-subscription-name` unwrapped); it scopes the event id.
    var subscription: String
    var attributes: [String: String]
    /// The message data, decoded; nil when the message has none.
    var data: [UInt8]?

    static let messageIdHeader = "x-goog-pubsub-message-id"
    static let publishTimeHeader = "x-goog-pubsub-publish-time"
    static let subscriptionHeader = "x-goog-pubsub-subscription-name"

    /// Unwrapped when the message id header is present (only `writeMetadata` sends it), wrapped otherwise.
    init(_ request: WebhookRequest) throws(Rejection) {
        // The message id becomes ce_id: two copies would make it ambiguous.
        if let messageId = try request.singleHeader(Self.messageIdHeader) {
            guard !messageId.isEmpty else { throw Rejection(.invalidField, "\(Self.messageIdHeader) is empty") }
            self.messageId = messageId
            publishTime = request.headers[Self.publishTimeHeader]
            guard let subscription = try request.singleHeader(Self.subscriptionHeader), !subscription.isEmpty else {
                throw Rejection(.missingField, "\(Self.subscriptionHeader) is missing or empty")
            }
            self.subscription = try Self.checkedSubscription(subscription, field: Self.subscriptionHeader)
            attributes = [:]
            data = request.body
            return
        }
        guard let body = JSONValue.parse(request.body)?.object else {
            throw Rejection(.malformedJSON, "the body is not a Pub/Sub push envelope (JSON object), and no \(Self.messageIdHeader) header marks an unwrapped push")
        }
        guard let messageValue = body["message"] else { throw Rejection(.missingField, "message is missing") }
        guard let message = messageValue.object else { throw Rejection(.invalidField, "message is not an object") }
        // Pub/Sub writes both spellings; when both are present they must agree.
        guard let messageId = try Self.oneOf(message, "messageId", "message_id") else {
            throw Rejection(.missingField, "message.messageId is missing")
        }
        guard !messageId.isEmpty else { throw Rejection(.invalidField, "message.messageId is empty") }
        self.messageId = messageId
        publishTime = try Self.oneOf(message, "publishTime", "publish_time")
        let subscriptionValue = body["subscription"]
        attributes = [:]
        switch message["attributes"] {
        case nil, .null?: break
        case .object(let map)?:
            for (name, value) in map {
                guard let text = value.string else { throw Rejection(.invalidField, "message.attributes values must be strings") }
                attributes[name] = text
            }
        default: throw Rejection(.invalidField, "message.attributes is not an object")
        }
        switch message["data"] {
        case nil, .null?: data = nil
        case .string(let text)?:
            guard let decoded = Self.base64(text) else { throw Rejection(.invalidField, "message.data is not base64") }
            data = decoded
        default: throw Rejection(.invalidField, "message.data is not a string")
        }
        // Checked last, so an envelope broken elsewhere keeps its own reason.
        switch subscriptionValue {
        case nil, .null?: throw Rejection(.missingField, "subscription is missing")
        case .string(let name)? where !name.isEmpty: subscription = try Self.checkedSubscription(name, field: "subscription")
        default: throw Rejection(.invalidField, "subscription is not a non-empty string")
        }
    }

    /// `projects/<project>/subscriptions/<name>` as Pub/Sub names them (a name of at most 255 of
    /// `A-Z a-z 0-9 - . _ ~ + %`): it goes into every event id, so nothing longer or stranger does.
    static func checkedSubscription(_ name: String, field: String) throws(Rejection) -> String {
        let parts = name.split(separator: "/", omittingEmptySubsequences: false)
        let projectOK = parts.count == 4 && (1...100).contains(parts[1].utf8.count)
            && parts[1].utf8.allSatisfy { isAlphanumeric($0) || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: ":") || $0 == UInt8(ascii: "_") }
        let nameOK = parts.count == 4 && (1...255).contains(parts[3].utf8.count)
            && parts[3].utf8.allSatisfy { isAlphanumeric($0) || "-._~+%".utf8.contains($0) }
        guard parts.count == 4, parts[0] == "projects", parts[2] == "subscriptions", projectOK, nameOK else {
            throw Rejection(.invalidField, "\(field) is not projects/<project>/subscriptions/<name>")
        }
        return name
    }

    private static func isAlphanumeric(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
            || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
    }

    private static func oneOf(_ message: [String: JSONValue], _ camel: String, _ snake: String) throws(Rejection) -> String? {
        func text(_ key: String) throws(Rejection) -> String? {
            switch message[key] {
            case nil, .null?: return nil
            case .string(let value)?: return value
            default: throw Rejection(.invalidField, "message.\(key) is not a string")
            }
        }
        let first = try text(camel), second = try text(snake)
        if let first, let second, first != second {
            throw Rejection(.invalidField, "message.\(camel) and message.\(snake) differ")
        }
        return first ?? second
    }

    /// Standard base64 with padding, as Pub/Sub writes it; the URL-safe alphabet is accepted too
    /// (the data is authenticated by the token, not by its spelling).
    private static func base64(_ text: String) -> [UInt8]? {
        if let bytes = Base64.decodeStandard(text) { return bytes }
        var unpadded = Substring(text)
        while unpadded.hasSuffix("=") { unpadded = unpadded.dropLast() }
        return Base64.decodeURL(unpadded)
    }
}
