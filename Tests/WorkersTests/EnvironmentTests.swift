import Config
import Entitlements
import Events
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import StoreTestSupport
import Synchronization
import Testing
import Toolkit
import Verifiers
@testable import Merchant
@testable import ProviderAPIs
@testable import Workers

/// Sandbox purchases never entitle as production. Deliveries are verified and
/// normalized by the real senders (Apple with a generated chain, Citcon signed with the account's
/// secret), projected into a real store, and read back through the entitlement API.
@Suite("Sandbox apart from production")
struct EnvironmentTests {
    static let day: Int64 = 86_400_000
    static let token = "environment-test-api-token"
    static let user = "7e3fb20b-4cdb-47cc-936d-99d65f608138"

    /// A signed SUBSCRIBED notification for `user`'s subscription `originalTransactionId`, as Apple sends it.
    static func subscribed(_ chain: AppleTestChain, environment: String, originalTransactionId: String, uuid: String,
                           signedMs: Int64, expiresMs: Int64) throws -> WebhookRequest {
        let transaction = try chain.sign(AppleBodies.transaction(
            environment: environment, signedDate: signedMs, originalTransactionId: originalTransactionId,
            transactionId: originalTransactionId + "1", purchaseDate: signedMs, expiresDate: expiresMs, appAccountToken: user))
        let notification = AppleBodies.notification(type: "SUBSCRIBED", subtype: "INITIAL_BUY", environment: environment,
                                                    signedDate: signedMs, transactionJWS: transaction, notificationUUID: uuid)
        return AppleBodies.request(try chain.sign(notification), now: Timestamp(millisecondsSince1970: signedMs))
    }

    static func project(_ store: EntitlementStore, _ delivery: AcceptedDelivery, nowMs: Int64) async throws {
        #expect(try await store.apply(delivery.events.compactMap { Projector.change(for: $0) }, nowMs: nowMs) == [.applied])
    }

    @Test("a Sandbox SUBSCRIBED with a real user's appAccountToken gives no production entitlement; the sandbox query shows it",
          arguments: Backend.allCases)
    func appleSandbox(backend: Backend) async throws {
        try await TestDatabases.withStore(backend) { store async throws in
            let now = Timestamp.now.millisecondsSince1970
            let chain = try AppleTestChain()
            // Both environments enabled, as docs/senders/apple.md recommends.
            let source = chain.source(apps: [AppleSettings.App(bundleId: "com.example", appAppleId: 1234,
                                                               environments: ["Production", "Sandbox"])])
            // The user's real subscription, which expired ten days ago.
            let paid = try await source.handle(Self.subscribed(chain, environment: "Production", originalTransactionId: "2000",
                                                               uuid: "a0000000-0000-0000-0000-000000000001",
                                                               signedMs: now - 40 * Self.day, expiresMs: now - 10 * Self.day))
            try await Self.project(store, paid, nowMs: now)
            // A Sandbox purchase naming the same user (and even the same originalTransactionId), active for a month.
            let sandbox = try await source.handle(Self.subscribed(chain, environment: "Sandbox", originalTransactionId: "2000",
                                                                  uuid: "a0000000-0000-0000-0000-000000000002",
                                                                  signedMs: now - 1_000, expiresMs: now + 30 * Self.day))
            #expect(sandbox.events.map(\.environment) == [.sandbox])
            try await Self.project(store, sandbox, nowMs: now)

            let api = EntitlementAPI(store: store, tokens: [APIToken(Self.token)], logger: TestDatabases.logger, now: { now })
            let production = try await Self.get(api, "?app=com.example")
            #expect(production.status == 200)
            #expect(production.body?.environment == "production")
            #expect(production.body?.entitlements.isEmpty == true)
            let asked = try await Self.get(api, "?app=com.example&environment=production")
            #expect(asked.body?.entitlements.isEmpty == true)
            let sandboxAnswer = try await Self.get(api, "?app=com.example&environment=sandbox")
            #expect(sandboxAnswer.status == 200)
            #expect(sandboxAnswer.body?.environment == "sandbox")
            #expect(sandboxAnswer.body?.entitlements.map(\.product) == ["pro.monthly"])
            // The purchase by its opaque id: never the transaction id the store knows it by.
            let purchaseId = try #require(sandboxAnswer.body?.entitlements.first?.purchaseId)
            #expect(purchaseId.hasPrefix("pur_") && !sandboxAnswer.text.contains("2000"))

            // The production purchase is untouched by the sandbox one.
            let stored = try await store.purchase(PurchaseKey(source: "apple", app: "com.example", environment: "production", subject: "2000"))
            #expect(stored?.expiresAtMs == now - 10 * Self.day)

            // Each change names its environment and is keyed by it.
            let changes = try await store.pendingChanges(limit: 10)
            #expect(changes.map(\.entitlement.topicKey) == ["com.example/production/\(Self.user)/pro.monthly",
                                                            "com.example/sandbox/\(Self.user)/pro.monthly"])
            #expect(changes.map(\.active) == [false, true])
            let ids = PurchaseIds(key: Array("test-key".utf8))
            let values = changes.map { EntitlementJSON.value($0, ids: ids, catalog: CatalogSettings()) }
            #expect(values.map(\.environment) == ["production", "sandbox"])
            let message = OutboxRelay.message(topic: "tollgate.entitlements", ids: ids, catalog: CatalogSettings())(changes[1])
            #expect(message.key.map { String(decoding: $0, as: UTF8.self) } == "com.example/sandbox/\(Self.user)/pro.monthly")
            #expect(String(decoding: message.value, as: UTF8.self).contains(#""environment":"sandbox""#))
        }
    }

    @Test("the environment parameter is production or sandbox; anything else is 400 invalid_environment, counted")
    func invalidEnvironment() async throws {
        try await TestDatabases.withStore(.sqlite) { store async throws in
            let recorded = RecordingMetrics()
            let api = EntitlementAPI(store: store, tokens: [APIToken(Self.token)], metrics: MerchantMetrics(factory: recorded), logger: TestDatabases.logger)
            for value in ["Sandbox", "live", "", "production,sandbox"] {
                let answer = try await Self.get(api, "?app=com.example&environment=\(value)")
                #expect(answer.status == 400, "\(value)")
                #expect(answer.text.contains(#""error":"invalid_environment""#), "\(value)")
            }
            #expect(recorded.total("tollgate_api_rejections_total", ["reason": "invalid_environment"]) == 4)
        }
    }

    @Test("a Citcon account configured sandbox gives sandbox events; its purchases never reach production", arguments: Backend.allCases)
    func citconSandbox(backend: Backend) async throws {
        let settings = try SenderCatalog.standard.parseConfig(yaml: """
            sources:
              citcon:
                accounts:
                  - { name: shop, secrets: [live-secret] }
                  - { name: shop-test, secrets: [test-secret], environment: sandbox }
            """).sources.citcon
        #expect(settings.accounts.map(\.environment) == [.production, .sandbox])
        let source = CitconSource(settings: settings)
        try await TestDatabases.withStore(backend) { store async throws in
            let now = Timestamp.now.millisecondsSince1970
            let test = try await source.handle(Self.citcon(account: "shop-test", secret: "test-secret", id: "c-1"))
            #expect(test.events.map(\.environment) == [.sandbox])
            let live = try await source.handle(Self.citcon(account: "shop", secret: "live-secret", id: "c-2"))
            #expect(live.events.map(\.environment) == [.production])
            for delivery in [test, live] { try await Self.project(store, delivery, nowMs: now) }
            let key = { (app: String, environment: String) in
                PurchaseKey(source: "citcon", app: app, environment: environment, subject: "order-7")
            }
            #expect(try await store.purchase(key("shop-test", "sandbox"))?.state == .active)
            #expect(try await store.purchase(key("shop-test", "production")) == nil)
            #expect(try await store.purchase(key("shop", "production"))?.state == .active)
        }
    }

    @Test("an Iaptic app configured sandbox makes every event sandbox, even a purchase that says sandbox: false")
    func iapticSandbox() async throws {
        let settings = try SenderCatalog.standard.parseConfig(yaml: """
            sources:
              iaptic:
                apps:
                  - { name: live, secrets: [live-secret-0123] }
                  - { name: test, secrets: [test-secret-0123], environment: sandbox }
            """).sources.iaptic
        let source = IapticSource(settings: settings)
        let purchase = #"{"purchaseId":"apple:1","productId":"apple:m","platform":"apple","sandbox":false,"expirationDate":"2030-01-01T00:00:00Z"}"#
        func body(_ password: String) -> WebhookRequest {
            let text = #"{"type":"purchases.updated","password":"\#(password)","applicationUsername":"\#(Self.user)","purchases":{"apple:m":\#(purchase)}}"#
            return WebhookRequest(path: "/webhooks/iaptic", headers: HeaderFields([("Content-Type", "application/json")]),
                                  body: Array(text.utf8), receivedAt: Timestamp.now)
        }
        #expect(try await source.handle(body("test-secret-0123")).events.map(\.environment) == [.sandbox])
        #expect(try await source.handle(body("live-secret-0123")).events.map(\.environment) == [.production])
    }

    @Test("an account's environment other than production or sandbox stops start-up, naming the key")
    func configuredEnvironmentIsChecked() throws {
        for (sender, entry) in [("citcon", "accounts: [{ name: a, secrets: [s], environment: test }]"),
                                ("iaptic", "apps: [{ name: a, secrets: [s], environment: Sandbox }]")] {
            do {
                _ = try SenderCatalog.standard.parseConfig(yaml: "sources:\n  \(sender):\n    \(entry)\n")
                Issue.record("\(sender): accepted")
            } catch {
                #expect(error.key.hasSuffix("environment"), "\(error)")
            }
        }
    }

    // MARK: Helpers

    /// A UPI charge IPN for `account`, signed with `secret` over every field (docs/senders/citcon.md).
    static func citcon(account: String, secret: String, id: String) -> WebhookRequest {
        let values = [("id", id), ("transaction_type", "charge"), ("reference", "order-7"), ("amount", "1999"), ("currency", "USD"),
                      ("status", "success"), ("time_completed", "2026-11-20T10:00:05.000Z")]
        let fields = values.map(\.0).joined(separator: ",")
        let signed = (values + [("fields", fields)]).sorted { $0.0 < $1.0 }.map { "\($0.0)=\($0.1)" }.joined(separator: "&")
        let sign = Digest.hex(Digest.sha256(signed + "&secret=" + secret))
        let members = (values + [("fields", fields), ("sign", sign)]).map { #""\#($0.0)":"\#($0.1)""# }
        return WebhookRequest(path: "/webhooks/citcon/\(account)", headers: HeaderFields([("Content-Type", "application/json")]),
                              body: Array(("{" + members.joined(separator: ",") + "}").utf8), receivedAt: Timestamp.now)
    }

    struct Answer {
        struct Body: Decodable {
            struct Item: Decodable { var product, purchaseId: String }
            var environment: String
            var entitlements: [Item]
        }
        var status: Int
        var text: String
        var body: Body? { try? JSONDecoder().decode(Body.self, from: Data(text.utf8)) }
    }

    /// The API's answer to `GET /v1/users/<user>/entitlements<query>` with the test's token.
    static func get(_ api: EntitlementAPI, _ query: String) async throws -> Answer {
        var head = HTTPRequest(method: .get, scheme: "http", authority: "localhost", path: "/v1/users/\(user)/entitlements\(query)")
        head.headerFields[.authorization] = "Bearer \(token)"
        let response = try await api.routes.respond(Request(head: head, body: RequestBody(buffer: ByteBuffer())))
        let collected = CollectedBody()
        try await response.body.write(collected)
        return Answer(status: response.status.code, text: String(decoding: collected.bytes.withLock { $0 }, as: UTF8.self))
    }

    /// A response body's bytes, as a server would write them.
    final class CollectedBody: ResponseBodyWriter, Sendable {
        let bytes = Mutex<[UInt8]>([])
        func write(_ buffer: ByteBuffer) async throws { bytes.withLock { $0 += Array(buffer.readableBytesView) } }
        func finish(_ trailingHeaders: HTTPFields?) async throws {}
    }
}
