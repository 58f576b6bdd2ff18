/// `subscriptionState` of a subscription purchase, kept open: a state Google adds later decodes as
/// itself instead of failing the whole purchase.
public struct SubscriptionState: RawRepresentable, Hashable, Sendable, Decodable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    public init(from decoder: any Decoder) throws {
        rawValue = try decoder.singleValueContainer().decode(String.self)
    }

    public static let unspecified = SubscriptionState(rawValue: "SUBSCRIPTION_STATE_UNSPECIFIED")
    /// Created, awaiting payment during signup.
    public static let pending = SubscriptionState(rawValue: "SUBSCRIPTION_STATE_PENDING")
    public static let active = SubscriptionState(rawValue: "SUBSCRIPTION_STATE_ACTIVE")
    public static let paused = SubscriptionState(rawValue: "SUBSCRIPTION_STATE_PAUSED")
    /// Payment failed, the user keeps access while Google retries.
    public static let inGracePeriod = SubscriptionState(rawValue: "SUBSCRIPTION_STATE_IN_GRACE_PERIOD")
    /// Payment failed, access suspended while Google retries.
    public static let onHold = SubscriptionState(rawValue: "SUBSCRIPTION_STATE_ON_HOLD")
    /// Will not renew; access lasts until the expiry time.
    public static let canceled = SubscriptionState(rawValue: "SUBSCRIPTION_STATE_CANCELED")
    public static let expired = SubscriptionState(rawValue: "SUBSCRIPTION_STATE_EXPIRED")
    public static let pendingPurchaseCanceled = SubscriptionState(rawValue: "SUBSCRIPTION_STATE_PENDING_PURCHASE_CANCELED")

    public static let known: Set<SubscriptionState> = [
        .unspecified, .pending, .active, .paused, .inGracePeriod, .onHold, .canceled, .expired, .pendingPurchaseCanceled,
    ]
    public var isKnown: Bool { Self.known.contains(self) }

    public var description: String { rawValue }
}
