import Config
import Entitlements
import Events
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import Outbound
import Store
import Synchronization
import TestSupport
import Toolkit
import Verifiers
@testable import Merchant
@testable import ProviderAPIs
@testable import Workers

/// Keys, configuration and signed notifications for the checkout tests.
struct CheckoutFixture: Sendable {
    static let clientId = "CLIENT_CHECKOUT_01"
    static let citconAccount = "shop-us"
    static let citconSecret = "upi-secret-checkout-01"
    static let token = "checkout-test-token-0123"
    static let limitedToken = "checkout-limited-token-0123"
    /// Answers for every app but may not ask for refunds.
    static let noRefundToken = "checkout-norefund-token-0123"
    /// The app's embedded credential, and the key its backend signs user tokens with.
    static let clientToken = "checkout-client-token-public"
    static let userTokenKey = PrivateKey.generateP256()!

    static func userToken(_ user: String, app: String) -> String {
        UserTokenSigner.sign(user: user, app: app, key: userTokenKey, nowMs: Timestamp.now.millisecondsSince1970)!
    }
    static let publicBase = "https://pay.example.com"
    /// What the shop sells: the amount of every checkout comes from here.
    static let catalog = CatalogSettings(apps: [
        .init(name: "shop", ids: [clientId, citconAccount, "no-such-account", "another-app"], products: [
            .init(id: "pro.lifetime", pricesMinor: ["USD": 1999, "EUR": 1899], entitlements: ["pro"]),
            .init(id: "tweak.lifetime", pricesMinor: ["USD": 199], entitlements: ["tweak"]),
            .init(id: "other", pricesMinor: ["USD": 1999, "EUR": 1999]),
            .init(id: "other.product", pricesMinor: ["USD": 1999]),
        ]),
    ])
    /// Quiet: the tests provoke the failures the service logs loudly.
    static let logger: Logger = {
        var logger = Logger(label: "checkouts-test")
        logger.logLevel = .critical
        return logger
    }()

    let merchantKey: PrivateKey
    let platformKey: PrivateKey
    var config: TollgateConfig
    let folder: URL

    /// Generates the merchant and platform keys, writes them as an operator would, and configures one
    /// Alipay+ client (Antom at `antomBaseURL`) and one Citcon account.
    static func make(antomBaseURL: String, merchant: PrivateKey? = nil, platform: PrivateKey? = nil) async throws -> CheckoutFixture {
        var merchant = merchant, platform = platform
        if merchant == nil { merchant = await offPool { PrivateKey.generateRSA()! } }
        if platform == nil { platform = await offPool { PrivateKey.generateRSA()! } }
        guard let merchant, let platform else { throw CancellationError() }
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("tollgate-checkouts-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let merchantPath = folder.appendingPathComponent("merchant.pem").path
        let platformPath = folder.appendingPathComponent("antom-public.pem").path
        try Data((merchant.pem ?? "").utf8).write(to: URL(fileURLWithPath: merchantPath))
        try Data((platform.publicKeyPEM ?? "").utf8).write(to: URL(fileURLWithPath: platformPath))
        var config = TollgateConfig()
        var alipay = AlipayPlusSettings()
        alipay.clients = [.init(clientId: clientId, platformPublicKeys: [.init(path: platformPath)], merchantPrivateKey: merchantPath)]
        config.sources.alipayplus = alipay
        var citcon = CitconSettings()
        citcon.accounts = [.init(name: citconAccount, secrets: [citconSecret])]
        config.sources.citcon = citcon
        config.checkouts.publicBaseURL = publicBase
        config.checkouts.antomBaseURL = antomBaseURL
        config.checkouts.antomTimeoutMs = 3_000
        config.catalog = catalog
        return CheckoutFixture(merchantKey: merchant, platformKey: platform, config: config, folder: folder)
    }

    func setup() throws -> CheckoutSetup { try CheckoutSetup.make(config: config, fetcher: HTTPClientFetcher()) }

    func api(store: EntitlementStore, metrics: MerchantMetrics = MerchantMetrics(factory: RecordingMetrics()),
             now: @escaping @Sendable () -> Int64 = { Timestamp.now.millisecondsSince1970 },
             publisher: (any EventPublisher)? = nil) throws -> CheckoutAPI {
        let service = CheckoutService(setup: try setup(), store: store, metrics: metrics, logger: Self.logger, now: now, publisher: publisher)
        let credentials = APICredentials(tokens: [APIToken(Self.token, refunds: true), APIToken(Self.limitedToken, apps: ["another-app"]),
                                                  APIToken(Self.noRefundToken),
                                                  APIToken(Self.clientToken, kind: .client, apps: [Self.clientId, Self.citconAccount])],
                                         userTokenKeys: [Self.clientId: Self.userTokenKey.publicKey!, Self.citconAccount: Self.userTokenKey.publicKey!],
                                         ratePerSecond: 1_000, rateBurst: 1_000, now: now)
        return CheckoutAPI(service: service, credentials: credentials, catalog: config.catalog, metrics: metrics, logger: Self.logger)
    }

    /// Antom's notifyPayment for `reference`, signed with the platform key, verified by the Alipay+ sender.
    func antomNotification(reference: String, amount: String, currency: String = "USD") async throws -> [NormalizedEvent] {
        try await antomSigned(#"{"notifyType":"PAYMENT_RESULT","result":{"resultCode":"SUCCESS","resultStatus":"S","resultMessage":"success"},"paymentRequestId":"\#(reference)","paymentId":"pay-\#(reference)","paymentAmount":{"currency":"\#(currency)","value":"\#(amount)"},"paymentCreateTime":"2026-11-23T12:01:01+08:00","paymentTime":"2026-11-23T12:02:01+08:00"}"#)
    }

    /// Antom's notifyRefund for the refund `refundRequestId` asked, SUCCESS or FAIL, signed and verified likewise.
    func antomRefundNotification(refundRequestId: String, status: String = "SUCCESS", amount: String = "1999") async throws -> [NormalizedEvent] {
        let result = status == "SUCCESS" ? #"{"resultCode":"SUCCESS","resultStatus":"S","resultMessage":"success."}"#
                                         : #"{"resultCode":"REFUND_WINDOW_EXCEED","resultStatus":"F","resultMessage":"refund window exceeded"}"#
        let time = status == "SUCCESS" ? #","refundTime":"\#(Timestamp.now.rfc3339)""# : ""
        return try await antomSigned(#"{"notifyType":"REFUND_RESULT","result":\#(result),"refundStatus":"\#(status)","refundRequestId":"\#(refundRequestId)","refundId":"\#(FakeAntom.refundId(refundRequestId))","refundAmount":{"currency":"USD","value":"\#(amount)"}\#(time)}"#)
    }

    /// Antom's notifyDispute for the payment `reference` names, judged against the merchant, signed and verified likewise.
    func antomChargeback(reference: String) async throws -> [NormalizedEvent] {
        try await antomSigned(#"{"paymentRequestId":"\#(reference)","disputeId":"dp-\#(reference)","paymentId":"pay-\#(reference)","disputeTime":"\#(Timestamp.now.rfc3339)","disputeAmount":{"currency":"USD","value":"1999"},"disputeNotificationType":"DISPUTE_JUDGED","disputeJudgedTime":"\#(Timestamp.now.rfc3339)","disputeJudgedAmount":{"currency":"USD","value":"1999"},"disputeJudgedResult":"ACCEPT_BY_MERCHANT"}"#)
    }

    private func antomSigned(_ body: String) async throws -> [NormalizedEvent] {
        let time = Timestamp.now.rfc3339
        let content = AntomSignature.signedContent(path: "/webhooks/alipayplus", clientId: Self.clientId, time: time, body: Array(body.utf8))
        let signature = AntomSignature.header(signature: platformKey.signRSASHA256(content) ?? [], keyVersion: 1)
        let source = try AlipayPlusSource(settings: config.sources.alipayplus)
        let request = WebhookRequest(path: "/webhooks/alipayplus",
                                     headers: HeaderFields([("Content-Type", "application/json"), ("Client-Id", Self.clientId),
                                                            ("Request-Time", time), ("Signature", signature)]),
                                     body: Array(body.utf8), receivedAt: Timestamp.now)
        return try await source.handle(request).events
    }

    /// A Citcon UPI IPN for `reference`, signed with the account's secret over every field, verified by the Citcon sender.
    func citconIPN(reference: String, id: String, type: String = "charge", status: String = "success", amount: String,
                   currency: String = "USD") async throws -> [NormalizedEvent] {
        let values = [("id", id), ("transaction_type", type), ("reference", reference), ("amount", amount), ("currency", currency),
                      ("status", status), ("time_completed", Timestamp.now.rfc3339)]
        let fields = values.map(\.0).joined(separator: ",")
        let signed = (values + [("fields", fields)]).sorted { $0.0 < $1.0 }.map { "\($0.0)=\($0.1)" }.joined(separator: "&")
        let sign = Digest.hex(Digest.sha256(signed + "&secret=" + Self.citconSecret))
        let members = (values + [("fields", fields), ("sign", sign)]).map { #""\#($0.0)":"\#($0.1)""# }
        let request = WebhookRequest(path: "/webhooks/citcon/\(Self.citconAccount)", headers: HeaderFields([("Content-Type", "application/json")]),
                                     body: Array(("{" + members.joined(separator: ",") + "}").utf8), receivedAt: Timestamp.now)
        return try await CitconSource(settings: config.sources.citcon).handle(request).events
    }
}

/// One answer of the checkout API, read as a client reads it.
struct CheckoutAnswer {
    var status: Int
    var text: String
    var json: JSONValue? { JSONValue.parse(Array(text.utf8)) }
    var error: String? { json?["error"]?.string }
    func string(_ name: String) -> String? { json?[name]?.string }
}

extension CheckoutAPI {
    /// `POST /v1/checkouts` with `body` and a bearer token (none when nil).
    func post(_ body: String, token: String? = CheckoutFixture.token, userToken: String? = nil) async throws -> CheckoutAnswer {
        var head = HTTPRequest(method: .post, scheme: "http", authority: "localhost", path: Self.collectionPath)
        head.headerFields[.contentType] = "application/json"
        if let token { head.headerFields[.authorization] = "Bearer \(token)" }
        if let userToken { head.headerFields[APICredentials.userTokenHeader] = userToken }
        return try await Self.read(await routes.respond(Request(head: head, body: RequestBody(buffer: ByteBuffer(bytes: Array(body.utf8))))))
    }

    /// `POST /v1/checkouts/{id}/refund`.
    func askRefund(_ id: String, token: String = CheckoutFixture.token, userToken: String? = nil) async throws -> CheckoutAnswer {
        var head = HTTPRequest(method: .post, scheme: "http", authority: "localhost", path: "/v1/checkouts/\(id)/refund")
        head.headerFields[.authorization] = "Bearer \(token)"
        if let userToken { head.headerFields[APICredentials.userTokenHeader] = userToken }
        return try await Self.read(await routes.respond(Request(head: head, body: RequestBody(buffer: ByteBuffer()))))
    }

    /// `GET /v1/checkouts?<query>`.
    func list(_ query: String, token: String = CheckoutFixture.token, userToken: String? = nil) async throws -> CheckoutAnswer {
        var head = HTTPRequest(method: .get, scheme: "http", authority: "localhost", path: Self.collectionPath + "?" + query)
        head.headerFields[.authorization] = "Bearer \(token)"
        if let userToken { head.headerFields[APICredentials.userTokenHeader] = userToken }
        return try await Self.read(await routes.respond(Request(head: head, body: RequestBody(buffer: ByteBuffer()))))
    }

    func get(_ id: String, token: String = CheckoutFixture.token, userToken: String? = nil) async throws -> CheckoutAnswer {
        var head = HTTPRequest(method: .get, scheme: "http", authority: "localhost", path: "/v1/checkouts/\(id)")
        head.headerFields[.authorization] = "Bearer \(token)"
        if let userToken { head.headerFields[APICredentials.userTokenHeader] = userToken }
        return try await Self.read(await routes.respond(Request(head: head, body: RequestBody(buffer: ByteBuffer()))))
    }

    static func read(_ response: Response) async throws -> CheckoutAnswer {
        let collected = EnvironmentTests.CollectedBody()
        try await response.body.write(collected)
        return CheckoutAnswer(status: response.status.code, text: String(decoding: collected.bytes.withLock { $0 }, as: UTF8.self))
    }
}

extension EntitlementStore {
    /// Whether `user` is entitled to `product` in `app` now.
    func entitles(app: String, user: String, product: String) async throws -> Bool {
        let now = Timestamp.now.millisecondsSince1970
        return try await entitlements(app: app, user: user)?.contains { $0.product == product && $0.isActive(atMs: now) } ?? false
    }

    /// The purchase of the fixture's Alipay+ client (production) whose subject is `subject`.
    func antomPurchase(_ subject: String) async throws -> Purchase? {
        try await purchase(PurchaseKey(source: "alipayplus", app: CheckoutFixture.clientId, environment: "production", subject: subject))
    }

    func checkoutCount() async throws -> Int64 {
        try await database.read { connection throws(StoreError) in
            try connection.query("SELECT COUNT(*) AS n FROM checkouts", []).first?.int("n") ?? -1
        }
    }
}
