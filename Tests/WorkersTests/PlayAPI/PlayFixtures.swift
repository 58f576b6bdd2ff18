import Events
/// Purchases shaped as Google's reference shows them (purchases.subscriptionsv2, purchases.productsv2 and
/// monetization.onetimeproducts, Android Publisher API v3), including the nulls its sample answers carry.
enum PlayFixtures {
    /// An auto-renewing subscription bought with an offer, replacing an earlier purchase.
    static let activeSubscription = #"""
    {
      "kind": "androidpublisher#subscriptionPurchaseV2",
      "regionCode": "US",
      "lineItems": [
        {
          "productId": "premium_monthly",
          "expiryTime": "2022-05-22T18:39:58.270Z",
          "autoRenewingPlan": {
            "autoRenewEnabled": true
          },
          "offerDetails": {
            "basePlanId": "monthly",
            "offerId": "intro-offer",
            "offerTags": ["intro", "winback"]
          },
          "latestSuccessfulOrderId": "GPA.3345-1234-5678-90123"
        }
      ],
      "startTime": "2022-04-22T18:39:58.270Z",
      "subscriptionState": "SUBSCRIPTION_STATE_ACTIVE",
      "latestOrderId": "GPA.3345-1234-5678-90123",
      "linkedPurchaseToken": "kmgpcmjdnlfcbihnhcebkahb.AO-J1OzPreviousPurchaseToken",
      "pausedStateContext": null,
      "canceledStateContext": null,
      "testPurchase": null,
      "acknowledgementState": "ACKNOWLEDGEMENT_STATE_ACKNOWLEDGED",
      "externalAccountIdentifiers": {
        "externalAccountId": "user-ext-acc-88765",
        "obfuscatedExternalAccountId": "obfuscated-acc-id-aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789",
        "obfuscatedExternalProfileId": "obfuscated-profile-id-9876543210"
      }
    }
    """#

    /// A tester's prepaid subscription the user canceled, with fields this client does not model
    /// and nanosecond times.
    static let canceledPrepaidSubscription = #"""
    {
      "kind": "androidpublisher#subscriptionPurchaseV2",
      "regionCode": "DE",
      "lineItems": [
        {
          "productId": "premium_prepaid",
          "expiryTime": "2022-04-29T18:39:58.270123456Z",
          "prepaidPlan": {
            "allowExtendAfterTime": "2022-04-26T18:39:58Z"
          },
          "offerDetails": {
            "basePlanId": "prepaid-week"
          }
        }
      ],
      "startTime": "2022-04-22T18:39:58.270123456Z",
      "subscriptionState": "SUBSCRIPTION_STATE_CANCELED",
      "canceledStateContext": {
        "userInitiatedCancellation": {
          "cancelSurveyResult": {
            "reason": "CANCEL_SURVEY_REASON_NOT_ENOUGH_USAGE"
          },
          "cancelTime": "2022-04-23T09:00:00.5Z"
        }
      },
      "testPurchase": {},
      "acknowledgementState": "ACKNOWLEDGEMENT_STATE_PENDING",
      "etag": "BwYEqsgTCX4=",
      "outOfAppPurchaseContext": {
        "expiredPurchaseToken": "an-older-token"
      }
    }
    """#

    /// A paused subscription in a state this client has never heard of.
    static let pausedSubscriptionWithNewState = #"""
    {
      "kind": "androidpublisher#subscriptionPurchaseV2",
      "subscriptionState": "SUBSCRIPTION_STATE_SOMETHING_NEW",
      "pausedStateContext": {
        "autoResumeTime": "2022-06-01T00:00:00Z"
      },
      "lineItems": []
    }
    """#

    /// A consumable bought twice over through a purchase option, acknowledged, not yet consumed, as
    /// `purchases.productsv2.getproductpurchasev2` answers it.
    static let product = #"""
    {
      "kind": "androidpublisher#productPurchaseV2",
      "productLineItem": [
        {
          "productId": "coins_100",
          "productOfferDetails": {
            "purchaseOptionId": "coins-buy",
            "quantity": 2,
            "refundableQuantity": 2,
            "offerTags": ["bulk"],
            "consumptionState": "CONSUMPTION_STATE_YET_TO_BE_CONSUMED"
          }
        }
      ],
      "purchaseStateContext": { "purchaseState": "PURCHASED" },
      "orderId": "GPA.3312-5678-9012-34567",
      "obfuscatedExternalAccountId": "obfuscated-acc-id-aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789",
      "obfuscatedExternalProfileId": "obfuscated-profile-id-9876543210",
      "regionCode": "GB",
      "purchaseCompletionTime": "2022-04-22T18:39:58.270Z",
      "acknowledgementState": "ACKNOWLEDGEMENT_STATE_ACKNOWLEDGED"
    }
    """#

    /// A license tester's one-time purchase: paid with a test card (`testPurchaseContext`).
    static let testProduct = #"""
    {
      "kind": "androidpublisher#productPurchaseV2",
      "productLineItem": [
        { "productId": "coins_100", "productOfferDetails": { "purchaseOptionId": "coins-buy", "quantity": 1, "refundableQuantity": 1,
          "consumptionState": "CONSUMPTION_STATE_YET_TO_BE_CONSUMED" } }
      ],
      "purchaseStateContext": { "purchaseState": "PURCHASED" },
      "testPurchaseContext": { "fopType": "TEST" },
      "orderId": "GPA.3312-0000-0000-00001",
      "obfuscatedExternalAccountId": "obfuscated-acc-id-tester",
      "regionCode": "GB",
      "purchaseCompletionTime": "2022-04-22T18:39:58.270Z",
      "acknowledgementState": "ACKNOWLEDGEMENT_STATE_ACKNOWLEDGED"
    }
    """#

    /// A one-time product's purchase: `quantity` units of `productId`, `refundable` of them not refunded,
    /// through `option` (a rental's when `rental`), in `state` (`PURCHASED`, `CANCELLED`, `PENDING`).
    static func productV2(productId: String = "coins_100", quantity: Int = 1, refundable: Int? = nil, option: String = "buy",
                          offerId: String? = nil, rental: Bool = false, state: String = "PURCHASED", completedMs: Int64? = 1_650_652_798_270,
                          acknowledged: Bool = true, test: Bool = false, account: String? = nil, orderId: String = "GPA.3312-7777-8888-99999") -> String {
        let offer = offerId.map { #""offerId": "\#($0)", "# } ?? ""
        let rent = rental ? #", "rentOfferDetails": {}"# : ""
        let completion = completedMs.map { #", "purchaseCompletionTime": "\#(Timestamp(millisecondsSince1970: $0).rfc3339)""# } ?? ""
        let testContext = test ? #", "testPurchaseContext": { "fopType": "TEST" }"# : ""
        let accountField = account.map { #", "obfuscatedExternalAccountId": "\#($0)""# } ?? ""
        return #"""
        { "kind": "androidpublisher#productPurchaseV2",
          "productLineItem": [ { "productId": "\#(productId)", "productOfferDetails": { \#(offer)"purchaseOptionId": "\#(option)",
            "quantity": \#(quantity), "refundableQuantity": \#(refundable ?? quantity),
            "consumptionState": "CONSUMPTION_STATE_YET_TO_BE_CONSUMED"\#(rent) } } ],
          "purchaseStateContext": { "purchaseState": "\#(state)" }, "orderId": "\#(orderId)", "regionCode": "US",
          "acknowledgementState": "\#(acknowledged ? "ACKNOWLEDGEMENT_STATE_ACKNOWLEDGED" : "ACKNOWLEDGEMENT_STATE_PENDING")"\#(completion)\#(testContext)\#(accountField) }
        """#
    }

    /// `monetization.onetimeproducts.get` for a product with a buy option and a rent option (`rentalPeriod`).
    static func oneTimeProduct(productId: String = "movie_hd", rentalPeriod: String = "P2D") -> String {
        #"""
        { "packageName": "com.example.tollgate", "productId": "\#(productId)",
          "listings": [ { "languageCode": "en-US", "title": "A film" } ],
          "purchaseOptions": [
            { "purchaseOptionId": "buy", "state": "ACTIVE", "buyOption": { "legacyCompatible": true } },
            { "purchaseOptionId": "rent", "state": "ACTIVE", "rentOption": { "rentalPeriod": "\#(rentalPeriod)", "expirationPeriod": "PT48H" } }
          ] }
        """#
    }
}
