import Events
import Foundation
import TestSupport
import Testing
import Toolkit
#if canImport(Glibc)
import Glibc
#endif

/// Checkouts through `tollgate dev` as a merchant's backend and the providers use it (docs/checkouts.md):
/// `POST /v1/checkouts` over HTTP, Antom's `pay` played by a local server answering as Antom documents
/// (it verifies Tollgate's request signature with the merchant's public key and signs its answer with
/// the platform key), then the provider's signed notification through the real webhook route, the
/// projection and the entitlement API.
@Suite("tollgate dev: checkouts entitle the user who paid")
struct CheckoutDevTests {
    static let token = "cli-checkout-token-0123456789"
    static let clientId = "CLIENT_CLI_CHECKOUT_01"
    static let account = "shop-cli"
    static let secret = "upi-secret-cli-checkout"
    static let publicBase = "https://pay.example.com"

    @Test("Antom: pay signed, cashier page answered, the signed notification entitles; Citcon: paid, refunded, and a wrong amount quarantined while the right one pays")
    func checkoutsThroughDev() async throws {
        let (merchant, platform) = await offPool { (PrivateKey.generateRSA()!, PrivateKey.generateRSA()!) }
        let merchantPublic = try #require(PublicKey.load(pemOrDER: Array((merchant.publicKeyPEM ?? "").utf8)))
        let antom = FakeAntom(merchantPublicKey: merchantPublic, platformKey: platform, clientId: Self.clientId)
        defer { antom.stop() }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tollgate-checkout-dev-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let merchantPath = directory.appendingPathComponent("merchant.pem").path
        let platformPath = directory.appendingPathComponent("antom-public.pem").path
        try Data((merchant.pem ?? "").utf8).write(to: URL(fileURLWithPath: merchantPath))
        try Data((platform.publicKeyPEM ?? "").utf8).write(to: URL(fileURLWithPath: platformPath))
        let config = """
            http: { host: 127.0.0.1, port: 0 }
            api: { tokens: [\(Self.token)] }
            catalog:
              apps:
                - { name: Shop, ids: [\(Self.clientId)], products: [{ id: pro.lifetime, prices: { USD: 1999 }, entitlements: [pro] }] }
                - { name: UPI Shop, ids: [\(Self.account)], products: [{ id: pro.lifetime, prices: { USD: 2500 }, entitlements: [pro] }] }
            checkouts: { publicBaseURL: "\(Self.publicBase)", antomBaseURL: "\(antom.baseURL)", antomTimeoutMs: 5000 }
            sources:
              alipayplus: { clients: [{ clientId: \(Self.clientId), platformPublicKeys: [\(platformPath)], merchantPrivateKey: \(merchantPath) }] }
              citcon: { accounts: [{ name: \(Self.account), secrets: [\(Self.secret)] }] }
            """
        let configPath = directory.appendingPathComponent("tollgate.yaml").path
        try Data(config.utf8).write(to: URL(fileURLWithPath: configPath))
        try await withOwnDev(configPath: configPath, directory: directory) { base in
            try await Self.antomCheckout(base: base, antom: antom, platform: platform)
            try await Self.citconCheckouts(base: base)
        }
    }

    static func antomCheckout(base: String, antom: FakeAntom, platform: PrivateKey) async throws {
        let created = try await post(base, #"{"app":"\#(clientId)","user":"user-a","product":"pro.lifetime","amount":1999,"currency":"USD","provider":"alipayplus"}"#)
        #expect(created.status == 201, "\(created.body)")
        let reference = try #require(created.json?["reference"]?.string)
        let id = try #require(created.json?["id"]?.string)
        #expect(created.json?["paymentUrl"]?.string == FakeAntom.pageURL(reference))
        let seen = try #require(antom.seen.first)
        #expect(seen.signatureVerified)
        #expect(seen.body?["paymentNotifyUrl"]?.string == "\(publicBase)/webhooks/alipayplus")
        #expect(seen.body?["paymentRequestId"]?.string == reference)

        let body = #"{"notifyType":"PAYMENT_RESULT","result":{"resultCode":"SUCCESS","resultStatus":"S","resultMessage":"success"},"paymentRequestId":"\#(reference)","paymentId":"pay-\#(reference)","paymentAmount":{"currency":"USD","value":"1999"},"paymentTime":"\#(Timestamp.now.rfc3339)"}"#
        let time = Timestamp.now.rfc3339
        let signature = try #require(platform.signRSASHA256(FakeAntom.content(path: "/webhooks/alipayplus", clientId: clientId, time: time,
                                                                              body: Array(body.utf8))))
        let notified = try await HTTP.request("POST", base + "/webhooks/alipayplus", headers: [
            "Content-Type": "application/json", "Client-Id": clientId, "Request-Time": time,
            "Signature": "algorithm=RSA256,keyVersion=1,signature=\(FakeAntom.urlEncode(Base64.encodeStandard(signature)))"], body: body)
        #expect(notified.status == 200, "\(notified.body)")
        try await waitForEntitlement(base, app: clientId, user: "user-a", product: "pro.lifetime", present: true)
        #expect(try await get(base, "/v1/checkouts/\(id)").json?["state"]?.string == "paid")
    }

    static func citconCheckouts(base: String) async throws {
        // The app cannot name its own price: a 1-cent checkout for a 25.00 product is refused, nothing is made.
        let cent = try await post(base, #"{"app":"\#(account)","user":"user-e","product":"pro.lifetime","amount":1,"currency":"USD","provider":"citcon"}"#)
        #expect(cent.status == 422 && cent.json?["error"]?.string == "price_mismatch", "\(cent.body)")
        // Without an amount, the catalog's.
        let priced = try await post(base, #"{"app":"\#(account)","user":"user-e","product":"pro.lifetime","currency":"USD","provider":"citcon"}"#)
        #expect(priced.status == 201 && priced.json?["amount"]?.int64 == 2500, "\(priced.body)")
        let created = try await post(base, #"{"app":"\#(account)","user":"user-c","product":"pro.lifetime","amount":2500,"currency":"USD","provider":"citcon"}"#)
        #expect(created.status == 201, "\(created.body)")
        let reference = try #require(created.json?["reference"]?.string)
        let id = try #require(created.json?["id"]?.string)
        #expect(created.json?["ipnUrl"]?.string == "\(publicBase)/webhooks/citcon/\(account)")
        #expect(try await ipn(base, reference: reference, id: "ch_cli_1", type: "charge", amount: "2500").status == 200)
        try await waitForEntitlement(base, app: account, user: "user-c", product: "pro.lifetime", present: true)
        #expect(try await ipn(base, reference: reference, id: "rf_cli_1", type: "refund", amount: "2500").status == 200)
        try await waitForEntitlement(base, app: account, user: "user-c", product: "pro.lifetime", present: false)
        #expect(try await get(base, "/v1/checkouts/\(id)").json?["state"]?.string == "refunded")

        let other = try await post(base, #"{"app":"\#(account)","user":"user-d","product":"pro.lifetime","amount":2500,"currency":"USD","provider":"citcon"}"#)
        let otherReference = try #require(other.json?["reference"]?.string)
        let otherId = try #require(other.json?["id"]?.string)
        // A payment of another amount is quarantined, not the checkout: it entitles nobody, and the owner's
        // payment of the checkout's amount, sent after it, then pays the checkout.
        #expect(try await ipn(base, reference: otherReference, id: "ch_cli_2", type: "charge", amount: "100").status == 200)
        #expect(try await ipn(base, reference: otherReference, id: "ch_cli_3", type: "charge", amount: "2500").status == 200)
        try await waitForEntitlement(base, app: account, user: "user-d", product: "pro.lifetime", present: true)
        #expect(try await get(base, "/v1/checkouts/\(otherId)").json?["state"]?.string == "paid")
        let metrics = try await HTTP.request("GET", base + "/metrics")
        #expect(metrics.body.contains(#"tollgate_checkout_payments_quarantined_total{provider="citcon",reason="amount_mismatch"} 1"#),
                "\(metrics.body.split(separator: "\n").filter { $0.contains("quarantined") })")
    }

    struct Answer {
        var status: Int
        var body: String
        var json: JSONValue? { JSONValue.parse(Array(body.utf8)) }
    }

    static func post(_ base: String, _ body: String) async throws -> Answer {
        let response = try await HTTP.request("POST", base + "/v1/checkouts", headers: ["Authorization": "Bearer \(token)", "Content-Type": "application/json"],
                                              body: body)
        return Answer(status: response.status, body: response.body)
    }

    static func get(_ base: String, _ path: String) async throws -> Answer {
        let response = try await HTTP.request("GET", base + path, headers: ["Authorization": "Bearer \(token)"])
        return Answer(status: response.status, body: response.body)
    }

    static func waitForEntitlement(_ base: String, app: String, user: String, product: String, present: Bool) async throws {
        _ = try await eventually("\(user) \(present ? "entitled to" : "no longer entitled to") \(product)") { () -> Bool? in
            let answer = try await get(base, "/v1/users/\(user)/entitlements?app=\(app)")
            let listed = answer.json?["entitlements"]?.array?.contains { $0["product"]?.string == product } ?? false
            return listed == present ? true : nil
        }
    }

    /// A Citcon UPI IPN signed with the account's secret over every field, posted to the account's route.
    static func ipn(_ base: String, reference: String, id: String, type: String, amount: String) async throws -> HTTP.Response {
        let values = [("id", id), ("transaction_type", type), ("reference", reference), ("amount", amount), ("currency", "USD"),
                      ("status", "success"), ("time_completed", Timestamp.now.rfc3339)]
        let fields = values.map(\.0).joined(separator: ",")
        let signed = (values + [("fields", fields)]).sorted { $0.0 < $1.0 }.map { "\($0.0)=\($0.1)" }.joined(separator: "&")
        let sign = Digest.hex(Digest.sha256(signed + "&secret=" + secret))
        let members = (values + [("fields", fields), ("sign", sign)]).map { #""\#($0.0)":"\#($0.1)""# }
        return try await HTTP.request("POST", base + "/webhooks/citcon/\(account)", headers: ["Content-Type": "application/json"],
                                      body: "{" + members.joined(separator: ",") + "}")
    }
}
