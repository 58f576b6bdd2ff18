import Config
import Console
import Entitlements
import Events
import Foundation
import Gateway
import Kafka
import StoreTestSupport
import TestSupport
import Testing
import Toolkit
import Verifiers

/// The deliveries behind a purchase's story: the raw delivery index, the delivery's page (its body with
/// every credential withheld) and the re-verify action (docs/console.md).
@Suite("Operator console raw deliveries")
struct RawDeliveryTests {
    static let secret = "shop-secret-0123456789"

    static func senders() -> SourcesSettings {
        var iaptic = IapticSettings()
        iaptic.apps = [.init(name: "shop", secrets: [secret])]
        var settings = SourcesSettings()
        settings.set(iaptic, for: .iaptic)
        return settings
    }

    /// An Iaptic callback about two purchases, one of them naming a token field.
    static let body = #"""
        {"type":"purchases.updated","password":"\#(secret)","applicationUsername":"dana","notification":{"id":"n-raw-1","reason":"RENEWED","purchaseId":"apple:7000","date":"2030-01-01T00:00:00Z"},
         "purchases":{"apple:pro":{"purchaseId":"apple:7000","transactionId":"apple:7000-t","productId":"apple:pro","platform":"apple","purchaseDate":"2030-01-01T00:00:00Z","expirationDate":"2031-01-01T00:00:00Z","renewalIntent":"Renew","isBillingRetryPeriod":false},
                      "apple:extra":{"purchaseId":"apple:7100","transactionId":"apple:7100-t","productId":"apple:extra","platform":"apple","purchaseDate":"2030-01-01T00:00:00Z","purchaseToken":"tok-must-not-show"}}}
        """#

    @Test("a delivery of two events is indexed for both; each purchase's story links to it; its page withholds credentials; an operator verifies it again, a read-only one cannot",
          arguments: Backend.allCases)
    func deliveryInTheStory(_ backend: Backend) async throws {
        try await WorkerHarness.with { harness in
            try await TestDatabases.withStore(backend) { store in
                try await harness.withWorkers(store: store, console: try ConsoleActionTests.setup(), senderSettings: Self.senders()) { workers in
                    // Written as the gateway writes an accepted delivery: the raw record, then each event.
                    var headers = HeaderFields()
                    headers.append(name: "Content-Type", value: "application/json")
                    let request = WebhookRequest(path: "/webhooks/iaptic", headers: headers, body: Array(Self.body.utf8),
                                                 receivedAt: Timestamp(rfc3339: "2030-01-01T00:00:01.000Z")!)
                    let source = IapticSource(settings: try #require(Self.senders().settings(.iaptic, as: IapticSettings.self)))
                    let delivery = try source.accept(request)
                    #expect(delivery.events.count == 2)
                    let registry = SourceRegistry([.init(source: source)])
                    let records = DeliveryRecordBuilder(topics: harness.topics, senders: registry).records(for: delivery, source: .iaptic, request: request)
                    #expect(records.first?.headers.contains { $0.name == RawRecordHeaders.eventIds } == true)
                    for record in records { _ = try await harness.producer.send(record) }

                    let ids = delivery.events.map(\.id)
                    try await waitUntil("both events indexed and applied", every: .milliseconds(200)) {
                        let indexed = try await store.rawDeliveries(ofEvents: ids)
                        let applied = try await store.purchaseIds(ofEvents: ids)
                        return Set(indexed.map(\.eventId)) == Set(ids) && Set(applied.map(\.eventId)) == Set(ids)
                    }
                    let position = try #require(try await store.rawDeliveries(ofEvents: ids).first?.position)
                    #expect(position.topic == harness.topics.raw(.iaptic))
                    let link = "/console/deliveries/iaptic/\(position.partition):\(position.offset)"

                    var alice = ConsoleActionTests.Browser(routes: workers.workers.routes)
                    try await alice.signIn(ConsoleActionTests.alice)
                    for purchase in Set(try await store.purchaseIds(ofEvents: ids).map(\.purchaseId)) {
                        let story = try await alice.call(.get, "/console/purchases/\(purchase)").body
                        #expect(story.contains("Delivered by the sender") && story.contains(link) && story.contains("(shop)"))
                        // The body, as the index kept it: opened and withheld as the delivery's page shows it.
                        #expect(story.contains("Body as delivered") && story.contains("n-raw-1") && !story.contains("tok-must-not-show")
                                && !story.contains(Self.secret))
                    }
                    let page = try await alice.call(.get, link)
                    #expect(page.status == 200)
                    #expect(page.body.contains("n-raw-1") && page.body.contains("dana") && page.body.contains("verified by the gateway (shop)"))
                    #expect(!page.body.contains("tok-must-not-show") && !page.body.contains(Self.secret) && page.body.contains("(withheld)"))
                    #expect(page.body.contains("2 event(s) would be published again"))

                    let token = try await alice.csrf()
                    let done = try await alice.call(.post, link + "/reverify", form: ["csrf": token])
                    #expect(done.status == 200 && done.body.contains("verified; 2 event(s) published again"))
                    #expect(try await store.audit().first.map { "\($0.action) \($0.outcome)" } == "delivery.reverify done")
                    // Published again with the same ids: each is on the events topic twice, applied once.
                    let events = try await harness.records(harness.topics.events, atLeast: 4)
                    #expect(events.filter { ids.contains($0.headers.string(CloudEventHeaders.id) ?? "") }.count == 4)

                    var bob = ConsoleActionTests.Browser(routes: workers.workers.routes)
                    try await bob.signIn(ConsoleActionTests.bob)
                    let readOnly = try await bob.call(.get, link)
                    #expect(readOnly.status == 200 && !readOnly.body.contains("/reverify") && readOnly.body.contains("n-raw-1"))
                    #expect(try await bob.call(.post, link + "/reverify", form: ["csrf": try await bob.csrf()]).status == 403)

                    // Positions that hold nothing, and ones that name nothing.
                    #expect(try await alice.call(.get, "/console/deliveries/iaptic/0:999999").status == 404)
                    #expect(try await alice.call(.get, "/console/deliveries/nobody/0:0").status == 404)
                    #expect(try await alice.call(.get, "/console/deliveries/iaptic/x:1").status == 404)
                    #expect(try await alice.call(.get, "/console/deliveries/iaptic/0:-1").status == 404)
                }
            }
        }
    }

    @Test("the index keeps a record once, leaves out what PostgreSQL would refuse (a NUL, 5,000 bytes) without failing the batch, and prunes by age",
          arguments: Backend.allCases)
    func indexRows(_ backend: Backend) async throws {
        try await TestDatabases.withStore(backend) { store in
            func delivery(_ id: String, offset: Int64, path: String? = "/webhooks/iaptic") -> RawDeliveryRows.Delivery {
                RawDeliveryRows.Delivery(eventId: id, source: "iaptic", position: .init(topic: "tollgate.raw.iaptic", partition: 1, offset: offset),
                                         receivedAt: "2030-01-01T00:00:00.000Z", path: path, scope: "shop", bodyBytes: 10)
            }
            try await store.recordRawDeliveries([delivery("iaptic:a", offset: 1), delivery("iaptic:b", offset: 1),
                                                 delivery("iaptic:\u{0}nul", offset: 2), delivery(String(repeating: "x", count: 5_000), offset: 3),
                                                 delivery("iaptic:c", offset: 4, path: "/webhooks/\u{0}")], nowMs: 1_000)
            try await store.recordRawDeliveries([delivery("iaptic:a", offset: 1)], nowMs: 2_000)
            try await store.recordRawDeliveries([delivery("iaptic:a", offset: 5)], nowMs: 3_000)
            #expect(try await store.rawDeliveries(ofEvents: ["iaptic:a"]).map(\.position.offset) == [1, 5])
            #expect(try await store.rawDeliveries(source: "iaptic", partition: 1, offset: 1).map(\.eventId) == ["iaptic:a", "iaptic:b"])
            #expect(try await store.rawDeliveries(ofEvents: ["iaptic:c"]).first?.path == nil)
            #expect(try await store.rawDeliveries(source: "iaptic", partition: 1, offset: 2).isEmpty)
            #expect(try await store.pruneRawDeliveries(beforeMs: 2_500) == 3)
            #expect(try await store.rawDeliveries(ofEvents: ["iaptic:a", "iaptic:b", "iaptic:c"]).map(\.position.offset) == [5])
        }
    }

    @Test("the calls made to a store for a purchase are kept only while the console is on, found by the purchase in either environment when an acknowledgement named none, and pruned by age",
          arguments: Backend.allCases)
    func storeCalls(_ backend: Backend) async throws {
        try await TestDatabases.withStore(backend) { store async throws in
            let key = PurchaseKey(source: "google", app: "com.example", environment: "sandbox", subject: "token-1")
            await store.noteStoreCall("play.acknowledge", source: "google", app: "com.example", subject: "token-1", outcome: "acknowledged",
                                      detail: "", nowMs: 1_000)
            #expect(try await store.storeCalls(key).isEmpty, "nothing is kept while the console is off")
            store.keepStoreCalls()
            await store.noteStoreCall("play.acknowledge", source: "google", app: "com.example", subject: "token-1", outcome: "queued",
                                      detail: "acknowledge_subscription: http_503", nowMs: 2_000)
            await store.noteStoreCall("refresh", source: "google", app: "com.example", subject: "token-1", environment: "sandbox",
                                      outcome: "changed", detail: "asked by console", nowMs: 3_000)
            await store.noteStoreCall("refresh", source: "google", app: "com.example", subject: "token-1", environment: "production",
                                      outcome: "unchanged", detail: "asked by api", nowMs: 4_000)
            await store.noteStoreCall("refresh", source: "google", app: "com.example", subject: "other", environment: "sandbox",
                                      outcome: "unchanged", detail: "", nowMs: 5_000)
            #expect(try await store.storeCalls(key).map(\.outcome) == ["queued", "changed"])
            #expect(try await store.pruneStoreCalls(beforeMs: 2_500) == 1)
            #expect(try await store.storeCalls(key).map(\.outcome) == ["changed"])
        }
    }

    @Test("a page shows a delivery's body opened (a JWS's payload, Pub/Sub's data, a form) with every credential withheld, and nothing of a body it cannot read")
    func redaction() throws {
        func base64URL(_ text: String) -> String {
            Data(text.utf8).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
                .replacingOccurrences(of: "=", with: "")
        }
        let transaction = base64URL(#"{"alg":"ES256"}"#) + "." + base64URL(#"{"transactionId":"2000","appAccountToken":"aat-hidden"}"#) + ".c2ln"
        let apple = #"{"signedPayload":"\#(base64URL(#"{"alg":"ES256","x5c":["cert-bytes"]}"#)).\#(base64URL(#"{"notificationType":"DID_RENEW","data":{"signedTransactionInfo":"\#(transaction)"}}"#)).c2ln"}"#
        let shownApple = DeliveryRedaction.pretty(Array(apple.utf8))
        #expect(shownApple.contains("DID_RENEW") && shownApple.contains("\"2000\"") && !shownApple.contains("aat-hidden") && !shownApple.contains("cert-bytes"))

        let rtdn = Data(#"{"packageName":"com.example","subscriptionNotification":{"purchaseToken":"secret-token","subscriptionId":"pro"}}"#.utf8).base64EncodedString()
        let google = #"{"message":{"data":"\#(rtdn)","messageId":"m-1"},"subscription":"projects/p/subscriptions/s"}"#
        let shownGoogle = DeliveryRedaction.pretty(Array(google.utf8))
        #expect(shownGoogle.contains("com.example") && shownGoogle.contains("m-1") && !shownGoogle.contains("secret-token")
                && !shownGoogle.contains(rtdn))

        // The URL-safe alphabet, unpadded; and data that does not open is withheld, not shown.
        let urlSafe = rtdn.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
        let shownURLSafe = DeliveryRedaction.pretty(Array(#"{"message":{"data":"\#(urlSafe)"}}"#.utf8))
        #expect(shownURLSafe.contains("com.example") && !shownURLSafe.contains("secret-token") && !shownURLSafe.contains(urlSafe))
        #expect(!DeliveryRedaction.pretty(Array(#"{"message":{"data":"c2VjcmV0LXRva2Vu!"}}"#.utf8)).contains("c2VjcmV0LXRva2Vu"))
        // JSON that does not parse is not shown, even with an = in it.
        #expect(DeliveryRedaction.pretty(Array(#"{"purchaseToken"="tok", oops"#.utf8)).hasSuffix("of JSON that does not parse: not shown)"))
        let form = DeliveryRedaction.pretty(Array("id=c-1&amount=100&sign=abcdef0123&notify_status=success".utf8))
        #expect(form.contains("c-1") && form.contains("success") && !form.contains("abcdef0123"))
        let nested = DeliveryRedaction.pretty(Array(#"{"a":{"Password":"p1","list":[{"client_secret":"s1"},{"Authorization":"Bearer x"}]}}"#.utf8))
        #expect(!nested.contains("p1") && !nested.contains("s1") && !nested.contains("Bearer") && nested.contains("(withheld)"))
        let binary = DeliveryRedaction.pretty([0xFF, 0x00, 0x3C])
        #expect(binary == "(3 bytes that are neither JSON nor a form: not shown)")
        let deep = String(repeating: "[", count: 40) + String(repeating: "]", count: 40)
        #expect(DeliveryRedaction.pretty(Array(deep.utf8)).contains("nested too deep"))
    }
}
