import Events
import Toolkit
/// A Play Real-time developer notification
/// (https://developer.android.com/google/play/billing/rtdn-reference): the message data of a push.
/// Google documents `eventTimeMillis` as a long but sends a string, so numbers are accepted in
/// both forms. Unknown fields are ignored; a kind of notification Google adds later is kept as `.other`.
struct DeveloperNotification: Sendable, Equatable {
    enum Kind: Sendable, Equatable {
        case subscription(SubscriptionNotification)
        case oneTimeProduct(OneTimeProductNotification)
        case voidedPurchase(VoidedPurchaseNotification)
        case pendingRefundReview(PendingRefundReviewNotification)
        case test
        /// A `...Notification` object this version does not know, by its field name.
        case other(name: String, purchaseToken: String?)
    }

    var version: String?
    var packageName: String
    var eventTimeMillis: Int64
    var kind: Kind

    /// Why message data is not an RTDN (the push is then quarantined, not refused).
    struct Invalid: Error, Equatable {
        /// `data_not_json` or `not_an_rtdn`.
        var reason: String
        var message: String
    }

    static let knownKinds = ["subscriptionNotification", "oneTimeProductNotification", "voidedPurchaseNotification",
                             "pendingRefundReviewNotification", "testNotification"]

    init(data: [UInt8]) throws(Invalid) {
        guard let value = JSONValue.parse(data) else {
            throw Invalid(reason: "data_not_json", message: "the message data is not JSON")
        }
        let fields = try RTDNFields(value, path: "notification") { Invalid(reason: "not_an_rtdn", message: $0) }
        version = try fields.string("version")
        packageName = try fields.requiredString("packageName")
        eventTimeMillis = try fields.requiredIntOrDigits("eventTimeMillis")
        guard Timestamp.representableMilliseconds.contains(eventTimeMillis) else {
            throw Invalid(reason: "not_an_rtdn", message: "eventTimeMillis \(EventTime.outsideMessage)")
        }

        let present = Self.knownKinds.filter { fields.has($0) }
        guard present.count <= 1 else {
            throw Invalid(reason: "not_an_rtdn", message: "the notification carries several kinds: \(present.joined(separator: ", "))")
        }
        switch present.first {
        case "subscriptionNotification": kind = .subscription(try SubscriptionNotification(fields.requiredNested("subscriptionNotification")))
        case "oneTimeProductNotification": kind = .oneTimeProduct(try OneTimeProductNotification(fields.requiredNested("oneTimeProductNotification")))
        case "voidedPurchaseNotification": kind = .voidedPurchase(try VoidedPurchaseNotification(fields.requiredNested("voidedPurchaseNotification")))
        case "pendingRefundReviewNotification":
            kind = .pendingRefundReview(try PendingRefundReviewNotification(fields.requiredNested("pendingRefundReviewNotification")))
        case "testNotification":
            _ = try fields.requiredNested("testNotification")
            kind = .test
        default:
            // Nothing is dropped: a new kind becomes store.other, keeping its name.
            guard let name = fields.keys.sorted(by: UTF8Order.precedes).first(where: { $0.hasSuffix("Notification") && fields.isObject($0) }) else {
                throw Invalid(reason: "not_an_rtdn", message: "the notification has none of \(Self.knownKinds.joined(separator: ", "))")
            }
            kind = .other(name: name, purchaseToken: try? fields.requiredNested(name).string("purchaseToken"))
        }
    }
}

/// Typed reads of one RTDN object; a wrong type or missing required field makes the data "not an RTDN".
typealias RTDNFields = JSONFields<DeveloperNotification.Invalid>

struct SubscriptionNotification: Sendable, Equatable {
    var version: String?
    var notificationType: Int64
    var purchaseToken: String
    /// Google stopped sending it; the purchase token alone identifies the subscription.
    var subscriptionId: String?

    init(_ f: RTDNFields) throws(DeveloperNotification.Invalid) {
        version = try f.string("version")
        notificationType = try f.requiredIntOrDigits("notificationType")
        purchaseToken = try f.requiredString("purchaseToken")
        subscriptionId = try f.string("subscriptionId")
    }
}

struct OneTimeProductNotification: Sendable, Equatable {
    var version: String?
    var notificationType: Int64
    var purchaseToken: String
    var sku: String?

    init(_ f: RTDNFields) throws(DeveloperNotification.Invalid) {
        version = try f.string("version")
        notificationType = try f.requiredIntOrDigits("notificationType")
        purchaseToken = try f.requiredString("purchaseToken")
        sku = try f.requiredString("sku")
    }
}

/// No `version` field, unlike the others.
struct VoidedPurchaseNotification: Sendable, Equatable {
    var purchaseToken: String
    var orderId: String?
    /// 1 subscription, 2 one-time.
    var productType: Int64?
    /// 1 full refund, 2 quantity-based partial refund.
    var refundType: Int64?

    init(_ f: RTDNFields) throws(DeveloperNotification.Invalid) {
        purchaseToken = try f.requiredString("purchaseToken")
        orderId = try f.string("orderId")
        productType = try f.intOrDigits("productType")
        refundType = try f.intOrDigits("refundType")
    }
}

/// A chargeback that Google asks the developer's view on (collaborative chargebacks): answered with
/// `orders.reviewrefund` within 24 hours, naming `pendingRefundToken`. It names the order, not the purchase token.
struct PendingRefundReviewNotification: Sendable, Equatable {
    var version: String?
    var pendingRefundToken: String
    var orderId: String
    /// Google reviews only chargebacks.
    var refundReason: Int64?
    var obfuscatedAccountId: String?

    init(_ f: RTDNFields) throws(DeveloperNotification.Invalid) {
        version = try f.string("version")
        pendingRefundToken = try f.requiredString("pendingRefundToken")
        orderId = try f.requiredString("orderId")
        refundReason = try f.intOrDigits("refundReason")
        obfuscatedAccountId = try f.string("obfuscatedAccountId")
    }
}
