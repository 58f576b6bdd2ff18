import Config
import Events
import Toolkit
import Verifiers

/// Builds Iaptic bodies and requests the way Iaptic sends them.
enum IapticFixtures {
    static let settings: IapticSettings = {
        var settings = IapticSettings()
        settings.apps = [IapticSettings.App(name: "alpha", secrets: ["old-secret", "new-secret"]),
                         IapticSettings.App(name: "beta", secrets: ["beta-secret"])]
        return settings
    }()

    static let source = IapticSource(settings: settings)
    static let receivedAt = Timestamp(rfc3339: "2026-11-21T12:00:00.000Z")!

    static func request(_ body: String, contentType: String? = "application/json", receivedAt: Timestamp = receivedAt) -> WebhookRequest {
        var headers = HeaderFields()
        if let contentType { headers.append(name: "Content-Type", value: contentType) }
        return WebhookRequest(path: "/webhooks/iaptic", headers: headers, body: Array(body.utf8), receivedAt: receivedAt)
    }

    static func purchase(id: String = "apple:1000", product: String = "apple:monthly", subscription: Bool = true,
                         extra: String = "") -> String {
        let subscriptionFields = subscription
            ? #","expirationDate":"2026-12-01T00:00:00Z","renewalIntent":"Renew","isBillingRetryPeriod":false"# : ""
        return #"{"purchaseId":"\#(id)","transactionId":"\#(id)-t","productId":"\#(product)","platform":"apple","sandbox":true,"purchaseDate":"2026-10-01T00:00:00Z","priceMicros":4990000,"currency":"EUR"\#(subscriptionFields)\#(extra)}"#
    }

    static func updated(password: String = "new-secret", reason: String? = "RENEWED", notificationId: String? = "n-1",
                        notificationTarget: String? = "apple:1000",
                        purchases: [(String, String)] = [("apple:monthly", purchase())]) -> String {
        var notification: [String] = []
        if let notificationId { notification.append(#""id":"\#(notificationId)""#) }
        if let reason { notification.append(#""reason":"\#(reason)""#) }
        if let notificationTarget { notification.append(#""purchaseId":"\#(notificationTarget)""#) }
        notification.append(#""date":"2026-11-20T08:00:00Z""#)
        let map = purchases.map { #""\#($0.0)":\#($0.1)"# }.joined(separator: ",")
        return #"{"type":"purchases.updated","password":"\#(password)","applicationUsername":"user-1","notification":{\#(notification.joined(separator: ","))},"purchases":{\#(map)}}"#
    }
}
