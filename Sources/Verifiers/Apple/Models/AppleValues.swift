/// Apple's string enums, kept open: an unknown value decodes as itself, never as a failure.
public struct AppleNotificationType: RawRepresentable, Hashable, Sendable, Decodable {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public init(from decoder: any Decoder) throws { rawValue = try decoder.singleValueContainer().decode(String.self) }

    /// The 23 notification types of App Store Server Notifications V2.
    public static let known: Set<String> = [
        "CONSUMPTION_REQUEST", "DID_CHANGE_RENEWAL_PREF", "DID_CHANGE_RENEWAL_STATUS", "DID_FAIL_TO_RENEW", "DID_RENEW",
        "EXPIRED", "EXTERNAL_PURCHASE_TOKEN", "GRACE_PERIOD_EXPIRED", "OFFER_REDEEMED", "PRICE_INCREASE", "REFUND",
        "REFUND_DECLINED", "REFUND_REVERSED", "RENEWAL_EXTENDED", "RENEWAL_EXTENSION", "REVOKE", "SUBSCRIBED", "TEST",
        "ONE_TIME_CHARGE", "METADATA_UPDATE", "MIGRATION", "PRICE_CHANGE", "RESCIND_CONSENT",
    ]
    public var isKnown: Bool { Self.known.contains(rawValue) }
}

public struct AppleSubtype: RawRepresentable, Hashable, Sendable, Decodable {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public init(from decoder: any Decoder) throws { rawValue = try decoder.singleValueContainer().decode(String.self) }

    /// The 17 subtypes.
    public static let known: Set<String> = [
        "INITIAL_BUY", "RESUBSCRIBE", "DOWNGRADE", "UPGRADE", "AUTO_RENEW_ENABLED", "AUTO_RENEW_DISABLED", "VOLUNTARY",
        "BILLING_RETRY", "PRICE_INCREASE", "GRACE_PERIOD", "PENDING", "ACCEPTED", "BILLING_RECOVERY", "PRODUCT_NOT_FOR_SALE",
        "SUMMARY", "FAILURE", "UNREPORTED",
    ]
    public var isKnown: Bool { Self.known.contains(rawValue) }
}

/// `Production`, `Sandbox`, `Xcode`, `LocalTesting`, or whatever Apple adds.
public struct AppleEnvironment: RawRepresentable, Hashable, Sendable, Decodable {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public init(from decoder: any Decoder) throws { rawValue = try decoder.singleValueContainer().decode(String.self) }

    public static let production = AppleEnvironment(rawValue: "Production")
    public static let sandbox = AppleEnvironment(rawValue: "Sandbox")
    public static let xcode = AppleEnvironment(rawValue: "Xcode")
    public static let localTesting = AppleEnvironment(rawValue: "LocalTesting")
    public static let all: [AppleEnvironment] = [.production, .sandbox, .xcode, .localTesting]
}

/// Apple dates are integer milliseconds since 1970; Xcode-signed payloads may carry a fraction.
public struct AppleDate: Hashable, Sendable, Decodable {
    public let milliseconds: Int64

    public init(milliseconds: Int64) { self.milliseconds = milliseconds }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let whole = try? container.decode(Int64.self) {
            milliseconds = whole
        } else {
            let value = try container.decode(Double.self)
            guard value.isFinite, abs(value) < 1e17 else {
                throw DecodingError.dataCorruptedError(in: container, debugDescription: "date out of range")
            }
            milliseconds = Int64(value.rounded(.down))
        }
    }
}
