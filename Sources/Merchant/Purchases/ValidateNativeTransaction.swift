import Events
import Foundation

/// `/v1/validate`'s `data.transaction`: cordova-plugin-purchase's native transaction of the purchase
/// asked about, in the plugin's own types (its `Validator.Response.NativeTransaction`).
extension ValidateAPI {
    /// The plugin's `NativeTransaction`, told apart by `type`: `apple-sk2` has nothing else; an
    /// `ios-appstore` one is Apple's receipt transaction (`AppleTransaction`, in verifyReceipt's names and
    /// date forms); an `android-playstore` one the Play Developer API's purchase (`GooglePurchase`, by
    /// `kind`). Each from the store's verified answer, and like every answer of Tollgate's, naming no store
    /// id: Apple's transaction ids are the purchase's opaque `purchaseId`, and no purchase token, order id,
    /// linked token or account id is given.
    enum NativeTransaction: Encodable, Equatable {
        /// `apple-sk2`'s, and any without the store's record: the type alone (the plugin's guard wants an object).
        case typeOnly(String)
        case apple(AppleTransaction)
        case playProduct(PlayProduct)
        case playSubscription(PlaySubscription)

        func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            switch self {
            case .typeOnly(let type): try container.encode(["type": type])
            case .apple(let transaction): try container.encode(transaction)
            case .playProduct(let purchase): try container.encode(purchase)
            case .playSubscription(let purchase): try container.encode(purchase)
            }
        }

        /// The native transaction of the purchase the request is about: the product asked for's, else the
        /// first; `purchaseId` names a purchase as the collection does.
        init(_ transactionType: String, purchases: [VerifiedPurchase], product: String?, purchaseId: (VerifiedPurchase) -> String?) {
            let purchase = purchases.first { $0.product == product } ?? purchases.first
            switch (transactionType, purchase?.record) {
            case ("apple-sk2", _): self = .typeOnly(transactionType)
            case (_, .playProduct(let purchaseState, let consumptionState, let acknowledgementState, let regionCode)?):
                self = .playProduct(PlayProduct(
                    productId: purchase?.product,
                    purchaseTimeMillis: (purchase?.transaction?.purchasedAt).flatMap(Timestamp.init(rfc3339:)).map { String($0.millisecondsSince1970) },
                    purchaseState: purchaseState, consumptionState: consumptionState, acknowledgementState: acknowledgementState,
                    quantity: purchase?.transaction?.quantity, regionCode: regionCode))
            case (_, .playSubscription(let state, let acknowledgementState, let regionCode, let lineItems)?):
                self = .playSubscription(PlaySubscription(
                    regionCode: regionCode, startTime: purchase?.transaction?.purchasedAt, subscriptionState: state,
                    acknowledgementState: acknowledgementState,
                    lineItems: lineItems.map { .init(productId: $0.productId, expiryTime: $0.expiryTime?.rfc3339) }))
            case (_, .apple(let originalPurchaseDate)?):
                let date = { (text: String?) in text.flatMap(Timestamp.init(rfc3339:)) }
                let purchased = date(purchase?.transaction?.purchasedAt)
                let expires = date(purchase?.transaction?.expiresAt)
                let revoked = date(purchase?.transaction?.revokedAt)
                let id = purchase.flatMap(purchaseId)
                self = .apple(AppleTransaction(
                    transaction_id: id, original_transaction_id: id, web_order_line_item_id: id, product_id: purchase?.product,
                    quantity: purchase?.transaction?.quantity.map(String.init),
                    purchase: AppleDates(purchased), original_purchase: AppleDates(originalPurchaseDate ?? purchased),
                    expires: AppleDates(expires), cancellation: AppleDates(revoked)))
            case (_, nil): self = .typeOnly(transactionType)
            }
        }
    }

    /// One instant in the three forms Apple's receipts give a date: `2026-11-27 10:15:00 Etc/GMT`,
    /// milliseconds as text, and Pacific time (`2026-11-27 02:15:00 America/Los_Angeles`).
    struct AppleDates: Equatable {
        var gmt: String
        var ms: String
        var pst: String

        init?(_ timestamp: Timestamp?) {
            guard let timestamp else { return nil }
            let date = Date(timeIntervalSince1970: Double(timestamp.millisecondsSince1970) / 1000)
            gmt = Self.format(date, zone: "Etc/GMT")
            ms = String(timestamp.millisecondsSince1970)
            pst = Self.format(date, zone: "America/Los_Angeles")
        }

        static func format(_ date: Date, zone: String) -> String {
            var calendar = Calendar(identifier: .gregorian)
            calendar.timeZone = TimeZone(identifier: zone) ?? .gmt
            let c = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second], from: date)
            let two = { (value: Int?) in (value ?? 0) < 10 ? "0\(value ?? 0)" : "\(value ?? 0)" }
            return "\(c.year ?? 1970)-\(two(c.month))-\(two(c.day)) \(two(c.hour)):\(two(c.minute)):\(two(c.second)) \(zone)"
        }
    }

    /// cordova-plugin-purchase's `AppleTransaction` (verifyReceipt's `in_app` entry), its ids the purchase's
    /// opaque id.
    struct AppleTransaction: Encodable, Equatable {
        var type = "ios-appstore"
        var transaction_id: String?
        var original_transaction_id: String?
        var web_order_line_item_id: String?
        var product_id: String?
        var quantity: String?
        var purchase: AppleDates?
        var original_purchase: AppleDates?
        var expires: AppleDates?
        var cancellation: AppleDates?

        enum CodingKeys: String, CodingKey {
            case type, transaction_id, original_transaction_id, web_order_line_item_id, product_id, quantity
            case purchase_date, purchase_date_ms, purchase_date_pst, original_purchase_date, original_purchase_date_ms, original_purchase_date_pst
            case expires_date, expires_date_ms, expires_date_pst, cancellation_date, cancellation_date_ms, cancellation_date_pst
        }

        func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(type, forKey: .type)
            try c.encodeIfPresent(transaction_id, forKey: .transaction_id)
            try c.encodeIfPresent(original_transaction_id, forKey: .original_transaction_id)
            try c.encodeIfPresent(web_order_line_item_id, forKey: .web_order_line_item_id)
            try c.encodeIfPresent(product_id, forKey: .product_id)
            try c.encodeIfPresent(quantity, forKey: .quantity)
            let dates: [(AppleDates?, CodingKeys, CodingKeys, CodingKeys)] = [
                (purchase, .purchase_date, .purchase_date_ms, .purchase_date_pst),
                (original_purchase, .original_purchase_date, .original_purchase_date_ms, .original_purchase_date_pst),
                (expires, .expires_date, .expires_date_ms, .expires_date_pst),
                (cancellation, .cancellation_date, .cancellation_date_ms, .cancellation_date_pst),
            ]
            for (value, gmt, ms, pst) in dates {
                guard let value else { continue }
                try c.encode(value.gmt, forKey: gmt)
                try c.encode(value.ms, forKey: ms)
                try c.encode(value.pst, forKey: pst)
            }
        }
    }

    /// The `ProductPurchase` shape the plugin types (v1's numbered states), filled from `productsv2`'s answer.
    struct PlayProduct: Encodable, Equatable {
        var type = "android-playstore"
        var kind = "androidpublisher#productPurchase"
        var productId: String?
        var purchaseTimeMillis: String?
        var purchaseState: Int?
        var consumptionState: Int?
        var acknowledgementState: Int?
        var quantity: Int?
        var regionCode: String?
    }

    /// The Play Developer API's `SubscriptionPurchaseV2` (`purchases.subscriptionsv2.get`), as the plugin types it.
    struct PlaySubscription: Encodable, Equatable {
        var type = "android-playstore"
        var kind = "androidpublisher#subscriptionPurchaseV2"
        var regionCode: String?
        var startTime: String?
        var subscriptionState: String?
        var acknowledgementState: String?
        var lineItems: [LineItem]

        struct LineItem: Encodable, Equatable {
            var productId: String?
            var expiryTime: String?
        }
    }
}
