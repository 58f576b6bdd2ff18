import Toolkit

/// cordova-plugin-purchase's response types (13.18: `Validator.Response.Payload` in
/// src/ts/validator/validator-response.ts, `VerifiedPurchase` in verified-receipt.ts, the native
/// transactions `AppleAppStore.VerifyReceipt.AppleTransaction` and `GooglePlay.PublisherAPI.GooglePurchase`),
/// checked field by field: each problem names the field. Keys the types do not name are problems too, so
/// an answer says nothing the plugin's documentation does not.
enum PluginResponseTypes {
    static func problems(_ json: JSONValue?) -> [String] {
        var problems: [String] = []
        guard let object = json?.object else { return ["the answer is not an object"] }
        guard case .bool(let ok)? = object["ok"] else { return ["ok is not a boolean"] }
        if ok {
            check(object, allowed: ["ok", "data"], at: "", &problems)
            guard let data = object["data"]?.object else { return problems + ["data is not an object"] }
            checkData(data, &problems)
        } else {
            // ErrorPayload: status?, code?, message?, data? ({latest_receipt?}; Iaptic's not-owned answers carry the whole data).
            check(object, allowed: ["ok", "status", "code", "message", "data", "error"], at: "", &problems)
            integer(object["status"], "status", optional: true, &problems)
            if let code = object["code"]?.int64, !(6_778_001...6_778_007).contains(code), !(6_777_001...6_777_030).contains(code) {
                problems.append("code \(code) is not an ErrorCode")
            }
            integer(object["code"], "code", optional: true, &problems)
            string(object["message"], "message", optional: true, &problems)
            // `error` is Tollgate's reason code, beside Iaptic's fields (the plugin ignores it).
            string(object["error"], "error", optional: true, &problems)
            if let data = object["data"] {
                guard let fields = data.object else { return problems + ["data is not an object"] }
                if fields["latest_receipt"] != nil, fields["latest_receipt"]?.bool == nil { problems.append("data.latest_receipt is not a boolean") }
                if fields["id"] != nil { checkData(fields, &problems) }
            }
        }
        return problems
    }

    private static func checkData(_ data: [String: JSONValue], _ problems: inout [String]) {
        check(data, allowed: ["id", "latest_receipt", "collection", "ineligible_for_intro_price", "transaction", "warning", "date"], at: "data.", &problems)
        string(data["id"], "data.id", &problems)
        if data["latest_receipt"]?.bool == nil { problems.append("data.latest_receipt is not a boolean") }
        if let collection = data["collection"] {
            for (index, item) in (collection.array ?? []).enumerated() { checkPurchase(item, "data.collection[\(index)]", &problems) }
            if collection.array == nil { problems.append("data.collection is not an array") }
        }
        if let ineligible = data["ineligible_for_intro_price"], ineligible.array?.allSatisfy({ $0.string != nil }) != true {
            problems.append("data.ineligible_for_intro_price is not an array of strings")
        }
        guard let transaction = data["transaction"]?.object else { return problems.append("data.transaction is not an object") }
        checkNative(transaction, &problems)
    }

    /// `VerifiedPurchase`.
    private static func checkPurchase(_ value: JSONValue, _ at: String, _ problems: inout [String]) {
        guard let item = value.object else { return problems.append("\(at) is not an object") }
        check(item, allowed: ["id", "platform", "purchaseId", "transactionId", "purchaseDate", "expiryDate", "isExpired", "isAcknowledged",
                              "isConsumed", "renewalIntent", "renewalIntentChangeDate", "cancelationReason", "isBillingRetryPeriod",
                              "isTrialPeriod", "isIntroPeriod", "discountId", "priceConsentStatus", "lastRenewalDate", "quantity"], at: at + ".", &problems)
        string(item["id"], "\(at).id", &problems)
        oneOf(item["platform"], "\(at).platform", ["ios-appstore", "android-playstore"], &problems)
        for key in ["purchaseId", "transactionId", "discountId"] { string(item[key], "\(at).\(key)", optional: true, &problems) }
        for key in ["purchaseDate", "expiryDate", "renewalIntentChangeDate", "lastRenewalDate", "quantity"] {
            integer(item[key], "\(at).\(key)", optional: true, &problems)
        }
        for key in ["isExpired", "isAcknowledged", "isConsumed", "isBillingRetryPeriod", "isTrialPeriod", "isIntroPeriod"] where item[key] != nil {
            if item[key]?.bool == nil { problems.append("\(at).\(key) is not a boolean") }
        }
        oneOf(item["renewalIntent"], "\(at).renewalIntent", ["Lapse", "Renew"], optional: true, &problems)
        oneOf(item["priceConsentStatus"], "\(at).priceConsentStatus", ["Notified", "Agreed"], optional: true, &problems)
        oneOf(item["cancelationReason"], "\(at).cancelationReason",
              ["", "Developer", "System", "System.Replaced", "System.ProductUnavailable", "System.BillingError", "System.Deleted", "Customer",
               "Customer.TechnicalIssues", "Customer.PriceIncrease", "Customer.Cost", "Customer.FoundBetterApp", "Customer.NotUsefulEnough",
               "Customer.OtherReason", "Unknown"], optional: true, &problems)
    }

    /// `Validator.Response.NativeTransaction`, by its `type`.
    private static func checkNative(_ t: [String: JSONValue], _ problems: inout [String]) {
        switch t["type"]?.string {
        case "apple-sk2":
            check(t, allowed: ["type"], at: "data.transaction.", &problems)
        case "ios-appstore":
            // AppleTransaction: every field a string.
            let required = ["original_purchase_date", "original_purchase_date_ms", "original_purchase_date_pst", "original_transaction_id",
                            "product_id", "purchase_date", "purchase_date_ms", "purchase_date_pst", "transaction_id", "web_order_line_item_id"]
            let optional = ["app_account_token", "cancellation_date", "cancellation_date_ms", "cancellation_date_pst",
                            "cancellation_reason", "expires_date", "expires_date_ms", "expires_date_pst", "in_app_ownership_type",
                            "is_in_intro_offer_period", "is_trial_period", "is_upgraded", "offer_code_ref_name", "promotional_offer_id",
                            "quantity", "subscription_group_identifier"]
            check(t, allowed: Set(["type"] + required + optional), at: "data.transaction.", &problems)
            for key in required { string(t[key], "data.transaction.\(key)", &problems) }
            for key in optional { string(t[key], "data.transaction.\(key)", optional: true, &problems) }
            for key in ["purchase_date_ms", "original_purchase_date_ms", "expires_date_ms", "cancellation_date_ms"] {
                if let text = t[key]?.string, Int64(text) == nil { problems.append("data.transaction.\(key) is not milliseconds") }
            }
        case "android-playstore":
            switch t["kind"]?.string {
            case "androidpublisher#productPurchase":
                check(t, allowed: ["type", "kind", "acknowledgementState", "consumptionState", "developerPayload", "obfuscatedExternalAccountId",
                                   "obfuscatedExternalProfileId", "orderId", "productId", "purchaseState", "purchaseTimeMillis", "purchaseToken",
                                   "purchaseType", "quantity", "regionCode"], at: "data.transaction.", &problems)
                for key in ["acknowledgementState", "consumptionState", "purchaseState", "purchaseType", "quantity"] {
                    integer(t[key], "data.transaction.\(key)", optional: true, &problems)
                }
                for key in ["orderId", "productId", "purchaseTimeMillis", "regionCode"] { string(t[key], "data.transaction.\(key)", optional: true, &problems) }
            case "androidpublisher#subscriptionPurchaseV2":
                check(t, allowed: ["type", "kind", "acknowledgementState", "canceledStateContext", "externalAccountIdentifiers", "latestOrderId",
                                   "lineItems", "linkedPurchaseToken", "pausedStateContext", "regionCode", "startTime", "subscribeWithGoogleInfo",
                                   "subscriptionState", "testPurchase"], at: "data.transaction.", &problems)
                oneOf(t["acknowledgementState"], "data.transaction.acknowledgementState",
                      ["ACKNOWLEDGEMENT_STATE_UNSPECIFIED", "ACKNOWLEDGEMENT_STATE_PENDING", "ACKNOWLEDGEMENT_STATE_ACKNOWLEDGED"], optional: true, &problems)
                oneOf(t["subscriptionState"], "data.transaction.subscriptionState",
                      ["SUBSCRIPTION_STATE_UNSPECIFIED", "SUBSCRIPTION_STATE_PENDING", "SUBSCRIPTION_STATE_ACTIVE", "SUBSCRIPTION_STATE_PAUSED",
                       "SUBSCRIPTION_STATE_IN_GRACE_PERIOD", "SUBSCRIPTION_STATE_ON_HOLD", "SUBSCRIPTION_STATE_CANCELED", "SUBSCRIPTION_STATE_EXPIRED"],
                      optional: true, &problems)
                for key in ["latestOrderId", "regionCode", "startTime"] { string(t[key], "data.transaction.\(key)", optional: true, &problems) }
                for (index, item) in (t["lineItems"]?.array ?? []).enumerated() {
                    guard let line = item.object else { problems.append("data.transaction.lineItems[\(index)] is not an object"); continue }
                    check(line, allowed: ["productId", "expiryTime", "autoRenewingPlan", "prepaidPlan"], at: "data.transaction.lineItems[\(index)].", &problems)
                    string(line["productId"], "data.transaction.lineItems[\(index)].productId", optional: true, &problems)
                    string(line["expiryTime"], "data.transaction.lineItems[\(index)].expiryTime", optional: true, &problems)
                }
            default:
                problems.append("data.transaction.kind \(t["kind"].map { "\($0)" } ?? "absent") is no GooglePurchase")
            }
        default:
            problems.append("data.transaction.type \(t["type"].map { "\($0)" } ?? "absent") is no NativeTransaction")
        }
    }

    private static func check(_ object: [String: JSONValue], allowed: Set<String>, at: String, _ problems: inout [String]) {
        for key in object.keys.sorted() where !allowed.contains(key) { problems.append("\(at)\(key) is not in the plugin's type") }
    }

    private static func string(_ value: JSONValue?, _ name: String, optional: Bool = false, _ problems: inout [String]) {
        if value == nil ? !optional : value?.string == nil { problems.append("\(name) is not a string") }
    }

    private static func integer(_ value: JSONValue?, _ name: String, optional: Bool = false, _ problems: inout [String]) {
        if value == nil ? !optional : value?.int64 == nil { problems.append("\(name) is not an integer") }
    }

    private static func oneOf(_ value: JSONValue?, _ name: String, _ values: Set<String>, optional: Bool = false, _ problems: inout [String]) {
        if value == nil ? !optional : !values.contains(value?.string ?? "\u{0}") { problems.append("\(name) is not one of the type's values") }
    }
}
