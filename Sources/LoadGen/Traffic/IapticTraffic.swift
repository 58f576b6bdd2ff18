/// Iaptic `purchases.updated` callbacks: the app's secret as `password`, the user's purchases, and the
/// notification that caused the callback (a renewal).
struct IapticTraffic: SenderTraffic {
    let source = "iaptic"
    let checksPerRequest = 0
    let algorithm: String? = nil

    let secret: String

    init(setup: BenchSetup) { secret = setup.iapticSecret }

    func request(_ index: Int, run: String) -> RequestParts {
        let purchase = "apple:\(run)\(index)"
        let body = #"{"type":"purchases.updated","password":"\#(secret)","applicationUsername":"user-\#(run)-\#(index)","notification":{"id":"ntf_\#(run)_\#(index)","reason":"RENEWED","date":"2026-01-01T00:00:00.000Z","productId":"apple:pro_monthly","purchaseId":"\#(purchase)"},"purchases":{"apple:pro_monthly":{"purchaseId":"\#(purchase)","transactionId":"\#(purchase)1","productId":"apple:pro_monthly","platform":"apple","sandbox":false,"purchaseDate":"2025-11-01T00:00:00.000Z","lastRenewalDate":"2026-01-01T00:00:00.000Z","expirationDate":"2026-02-01T00:00:00.000Z","renewalIntent":"Renew","isExpired":false,"isBillingRetryPeriod":false,"priceMicros":4990000,"currency":"USD"}}}"#
        return RequestParts(path: "/webhooks/iaptic", headers: [("Content-Type", "application/json")], body: Array(body.utf8))
    }
}
