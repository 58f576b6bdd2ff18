/// Purchases shaped as Google's reference shows them (purchases.subscriptionsv2 and
/// purchases.products, Android Publisher API v3), including the nulls its sample answers carry.
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

    /// A consumable bought twice over, acknowledged, not yet consumed.
    static let product = #"""
    {
      "kind": "androidpublisher#productPurchase",
      "purchaseTimeMillis": "1650652798270",
      "purchaseState": 0,
      "consumptionState": 0,
      "developerPayload": "",
      "orderId": "GPA.3312-5678-9012-34567",
      "acknowledgementState": 1,
      "productId": "coins_100",
      "quantity": 2,
      "obfuscatedExternalAccountId": "obfuscated-acc-id-aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789",
      "obfuscatedExternalProfileId": "obfuscated-profile-id-9876543210",
      "regionCode": "GB",
      "refundableQuantity": 2
    }
    """#

    /// A license tester's one-time purchase: `purchaseType` 0 (test).
    static let testProduct = #"""
    {
      "kind": "androidpublisher#productPurchase",
      "purchaseTimeMillis": "1650652798270",
      "purchaseState": 0,
      "consumptionState": 0,
      "orderId": "GPA.3312-0000-0000-00001",
      "purchaseType": 0,
      "acknowledgementState": 1,
      "productId": "coins_100",
      "obfuscatedExternalAccountId": "obfuscated-acc-id-tester",
      "regionCode": "GB"
    }
    """#
}
