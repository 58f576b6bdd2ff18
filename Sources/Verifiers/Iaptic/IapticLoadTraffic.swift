extension IapticSender {
    struct LoadIdentity: Codable {
        var app = "bench"
        var secret: String
    }

    /// One app with a generated secret.
    public static func prepareLoad(in directory: LoadDirectory) throws -> String? {
        let identity = LoadIdentity(secret: randomHex(16))
        try directory.write(json: identity, "identity.json")
        return #"{ apps: [{ name: \#(identity.app), secrets: ["\#(identity.secret)"] }] }"#
    }

    public static func loadTraffic(from directory: LoadDirectory) throws -> (any LoadTraffic)? {
        IapticLoadTraffic(secret: try directory.read(json: LoadIdentity.self, "identity.json").secret)
    }
}

/// Iaptic `purchases.updated` callbacks: the app's secret as `password`, the user's purchases, and the
/// notification that caused the callback (a renewal).
struct IapticLoadTraffic: LoadTraffic {
    let checksPerRequest = 0
    let algorithm: String? = nil

    let secret: String

    func request(_ index: Int, run: String) -> LoadRequest {
        let purchase = "apple:\(run)\(index)"
        let body = #"{"type":"purchases.updated","password":"\#(secret)","applicationUsername":"user-\#(run)-\#(index)","notification":{"id":"ntf_\#(run)_\#(index)","reason":"RENEWED","date":"2026-01-01T00:00:00.000Z","productId":"apple:pro_monthly","purchaseId":"\#(purchase)"},"purchases":{"apple:pro_monthly":{"purchaseId":"\#(purchase)","transactionId":"\#(purchase)1","productId":"apple:pro_monthly","platform":"apple","sandbox":false,"purchaseDate":"2025-11-01T00:00:00.000Z","lastRenewalDate":"2026-01-01T00:00:00.000Z","expirationDate":"2026-02-01T00:00:00.000Z","renewalIntent":"Renew","isExpired":false,"isBillingRetryPeriod":false,"priceMicros":4990000,"currency":"USD"}}}"#
        return LoadRequest(path: "/webhooks/iaptic", headers: [("Content-Type", "application/json")], body: Array(body.utf8))
    }
}
