import Events
import Rejections
import Toolkit
/// Apple's string enums, kept open: an unknown value decodes as itself, never as a failure.
public struct AppleNotificationType: RawRepresentable, Hashable, Sendable, OpenStringValue {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    /// The 23 notification types of App Store Server Notifications V2.
    public static let known: Set<String> = [
        "CONSUMPTION_REQUEST", "DID_CHANGE_RENEWAL_PREF", "DID_CHANGE_RENEWAL_STATUS", "DID_FAIL_TO_RENEW", "DID_RENEW",
        "EXPIRED", "EXTERNAL_PURCHASE_TOKEN", "GRACE_PERIOD_EXPIRED", "OFFER_REDEEMED", "PRICE_INCREASE", "REFUND",
        "REFUND_DECLINED", "REFUND_REVERSED", "RENEWAL_EXTENDED", "RENEWAL_EXTENSION", "REVOKE", "SUBSCRIBED", "TEST",
        "ONE_TIME_CHARGE", "METADATA_UPDATE", "MIGRATION", "PRICE_CHANGE", "RESCIND_CONSENT",
    ]
    public var isKnown: Bool { Self.known.contains(rawValue) }
}

public struct AppleSubtype: RawRepresentable, Hashable, Sendable, OpenStringValue {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    /// The 19 subtypes.
    public static let known: Set<String> = [
        "INITIAL_BUY", "RESUBSCRIBE", "DOWNGRADE", "UPGRADE", "AUTO_RENEW_ENABLED", "AUTO_RENEW_DISABLED", "VOLUNTARY",
        "BILLING_RETRY", "PRICE_INCREASE", "GRACE_PERIOD", "PENDING", "ACCEPTED", "BILLING_RECOVERY", "PRODUCT_NOT_FOR_SALE",
        "SUMMARY", "FAILURE", "UNREPORTED", "CREATED", "ACTIVE_TOKEN_REMINDER",
    ]
    public var isKnown: Bool { Self.known.contains(rawValue) }
}

/// `Production`, `Sandbox`, `Xcode`, `LocalTesting`, or whatever Apple adds.
public struct AppleEnvironment: RawRepresentable, Hashable, Sendable, OpenStringValue {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    public static let production = AppleEnvironment(rawValue: "Production")
    public static let sandbox = AppleEnvironment(rawValue: "Sandbox")
    public static let xcode = AppleEnvironment(rawValue: "Xcode")
    public static let localTesting = AppleEnvironment(rawValue: "LocalTesting")
    public static let all: [AppleEnvironment] = [.production, .sandbox, .xcode, .localTesting]
}

/// Apple dates are integer milliseconds since 1970; Xcode-signed payloads may carry a fraction.
public struct AppleDate: Hashable, Sendable, JSONReadable {
    public let milliseconds: Int64

    public init(milliseconds: Int64) { self.milliseconds = milliseconds }

    /// As events write dates (RFC 3339, milliseconds, UTC).
    public var rfc3339: String { Timestamp(millisecondsSince1970: milliseconds).rfc3339 }

    /// Nil (so the field is `malformed_jws`) outside years 0000-9999, which the event could not write.
    init?(json: JSONValue) {
        if let whole = json.int64 {
            milliseconds = whole
        } else if let value = json.double, value.isFinite, abs(value) < 1e17 {
            milliseconds = Int64(value.rounded(.down))
        } else {
            return nil
        }
        guard Timestamp.representableMilliseconds.contains(milliseconds) else { return nil }
    }
}

/// A value built from a parsed JSON tree (the payload is parsed once, by `JSONParser`).
protocol JSONReadable {
    init?(json: JSONValue)
}

/// A string enum kept open: any string decodes, as itself.
protocol OpenStringValue: RawRepresentable<String>, JSONReadable {
    init(rawValue: String)
}

extension OpenStringValue {
    init?(json: JSONValue) {
        guard let text = json.string else { return nil }
        self.init(rawValue: text)
    }
}

/// Typed reads of a signed payload's fields: a field of the wrong type is `malformed_jws`, not nil.
typealias AppleFields = JSONFields<Rejection>

extension JSONFields where Failure == Rejection {
    init(_ value: JSONValue, path: String) throws(Rejection) {
        try self.init(value, path: path) { Rejection(.malformedJWS, $0) }
    }

    func value<T: JSONReadable>(_ key: String) throws(Rejection) -> T? {
        guard let value = value(key) else { return nil }
        guard let typed = T(json: value) else { throw wrongType(key, "a valid \(T.self)") }
        return typed
    }
}
