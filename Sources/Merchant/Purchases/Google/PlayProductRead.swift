import Entitlements
import Events
import ProviderAPIs

/// A one-time purchase as the Play Developer API states it (`purchases.productsv2`), for one of its
/// products: the line item with its purchase option, offer and quantities, and, for a rental, when the
/// rental ends (the purchase option's rental period from the purchase's completion, read from the Play
/// catalog, `monetization.onetimeproducts.get`: the purchase itself does not carry it).
struct PlayProductRead: Sendable, Equatable {
    var purchase: ProductPurchaseV2
    var item: ProductPurchaseV2.LineItem
    var rentalEnd: Timestamp?

    var offer: ProductPurchaseV2.OfferDetails? { item.productOfferDetails }
    var isRental: Bool { offer?.rentOfferDetails != nil }
    /// Units bought (absent means one).
    var quantity: Int { max(1, offer?.quantity ?? 1) }
    /// Units not refunded: what the purchase entitles to.
    var unitsHeld: Int { min(quantity, max(0, offer?.refundableQuantity ?? quantity)) }

    /// Reads the purchase `token` and its line item of `productId`: nil when Google does not know the
    /// token (410) or the purchase holds no such product. A rental whose period cannot be read is an
    /// error: entitling it without an end would grant more than was sold.
    static func read(_ client: PlayAPIClient, packageName: String, productId: String, token: String) async throws(PlayAPIError) -> PlayProductRead? {
        guard let purchase = try await client.product(packageName: packageName, token: token) else { return nil }
        guard let item = purchase.lineItem(productId) else { return nil }
        var read = PlayProductRead(purchase: purchase, item: item, rentalEnd: nil)
        guard read.isRental, let completed = purchase.purchaseCompletionTime else { return read }
        let option = read.offer?.purchaseOptionId ?? ""
        let catalog: OneTimeProduct?
        do {
            catalog = try await client.oneTimeProduct(packageName: packageName, productId: productId)
        } catch {
            // Not in the catalog (404) is no period; anything else may pass on a retry.
            guard case .http(404) = error.kind else { throw error }
            catalog = nil
        }
        guard let end = catalog?.rentalEnd(option: option, from: completed) else {
            throw PlayAPIError(call: .oneTimeProduct, kind: .decode,
                               message: "the rental's purchase option has no rental period the catalog states (monetization.onetimeproducts)")
        }
        read.rentalEnd = end
        return read
    }

    /// What the projection applies: purchased entitles (until a rental ends; none once every unit is
    /// refunded), cancelled does not, pending waits. A test card's purchase is the sandbox's.
    var snapshot: PurchaseSnapshot {
        var state: PurchaseState = switch purchase.purchaseState {
        case "PURCHASED": .active
        case "CANCELLED": .canceled
        default: .pending
        }
        if state == .active, unitsHeld == 0 { state = .refunded }
        var snapshot = PurchaseSnapshot(kind: .oneTime, state: state, user: purchase.obfuscatedExternalAccountId, product: item.productId,
                                        expiresAtMs: rentalEnd?.millisecondsSince1970,
                                        environment: purchase.testPurchaseContext == nil ? .production : .sandbox, quantity: unitsHeld)
        snapshot.orderId = purchase.orderId
        return snapshot
    }

    /// The transaction as events carry it: the order, when it completed, units bought and refunded, the
    /// offer and purchase option, a rental's end.
    var transaction: NormalizedEvent.Transaction {
        NormalizedEvent.Transaction(id: purchase.orderId, purchasedAt: purchase.purchaseCompletionTime?.rfc3339,
                                    expiresAt: rentalEnd?.rfc3339, quantity: quantity,
                                    refundedQuantity: quantity > unitsHeld ? quantity - unitsHeld : nil,
                                    offerId: offer?.offerId, purchaseOption: offer?.purchaseOptionId, rental: isRental ? true : nil)
    }

    /// The states as `ProductPurchase` numbers them, for answers in the shape cordova-plugin-purchase types
    /// (`/v1/validate`'s native transaction): 0 purchased, 1 canceled, 2 pending; 0 yet to be consumed, 1 consumed;
    /// 0 yet to be acknowledged, 1 acknowledged.
    var numberedStates: (purchase: Int?, consumption: Int?, acknowledgement: Int?) {
        let purchaseState: Int? = switch purchase.purchaseState { case "PURCHASED": 0; case "CANCELLED": 1; case "PENDING": 2; default: nil }
        let consumption: Int? = switch offer?.consumptionState {
        case "CONSUMPTION_STATE_YET_TO_BE_CONSUMED": 0; case "CONSUMPTION_STATE_CONSUMED": 1; default: nil
        }
        let acknowledgement: Int? = switch purchase.acknowledgementState {
        case "ACKNOWLEDGEMENT_STATE_PENDING": 0; case "ACKNOWLEDGEMENT_STATE_ACKNOWLEDGED": 1; default: nil
        }
        return (purchaseState, consumption, acknowledgement)
    }
}
