import Events
import ProviderAPIs
import Synchronization

/// The Play Developer API's answers about the purchases apps report: the purchase verifier keeps what it
/// read, and the projection of the event that answer produced takes it once instead of asking Google
/// again, so a reported purchase costs one read of the merchant's Play quota, not two. Only an event of
/// a reported purchase (`PURCHASE_REPORTED`, which only the purchase service publishes) takes one; a
/// store's notification always asks Google. An answer is kept a minute at most, and at most 10,000 of
/// them; another replica's projection, or a later one, asks Google as before.
public final class PlayPurchaseReads: Sendable {
    enum Read: Sendable {
        case subscription(SubscriptionPurchaseV2)
        case product(PlayProductRead)
    }

    private struct Entry: Sendable {
        var read: Read
        var keptAtMs: Int64
    }

    static let lifetimeMs: Int64 = 60_000
    static let capacity = 10_000

    private let entries = Mutex<[String: Entry]>([:])
    private let now: @Sendable () -> Int64

    public init(now: @escaping @Sendable () -> Int64 = { Timestamp.now.millisecondsSince1970 }) {
        self.now = now
    }

    func keep(_ subscription: SubscriptionPurchaseV2, packageName: String, token: String) {
        keep(.subscription(subscription), key: Self.key(packageName, nil, token))
    }

    func keep(_ product: PlayProductRead, packageName: String, productId: String, token: String) {
        keep(.product(product), key: Self.key(packageName, productId, token))
    }

    /// The subscription the verifier read for this reported event's token, once.
    func takeSubscription(for event: NormalizedEvent) -> SubscriptionPurchaseV2? {
        guard event.isReportedPurchase, case .subscription(let read)? = take(Self.key(event.app, nil, event.subject)) else { return nil }
        return read
    }

    /// The one-time purchase the verifier read for this reported event's product and token, once.
    func takeProduct(for event: NormalizedEvent, productId: String) -> PlayProductRead? {
        guard event.isReportedPurchase, case .product(let read)? = take(Self.key(event.app, productId, event.subject)) else { return nil }
        return read
    }

    private func keep(_ read: Read, key: String) {
        let nowMs = now()
        entries.withLock { entries in
            if entries.count >= Self.capacity {
                entries = entries.filter { nowMs - $0.value.keptAtMs < Self.lifetimeMs }
                if entries.count >= Self.capacity { entries.removeAll(keepingCapacity: true) }
            }
            entries[key] = Entry(read: read, keptAtMs: nowMs)
        }
    }

    private func take(_ key: String) -> Read? {
        let nowMs = now()
        guard let entry = entries.withLock({ $0.removeValue(forKey: key) }), nowMs - entry.keptAtMs < Self.lifetimeMs else { return nil }
        return entry.read
    }

    /// Package, product (one-time purchases) and token, joined by a byte no id contains.
    private static func key(_ packageName: String, _ productId: String?, _ token: String) -> String {
        [packageName, productId ?? "", token].joined(separator: "\u{0}")
    }
}
