import Config
import Events
import Foundation
import TestSupport
import Testing
import Toolkit
import Verifiers

/// Deduplication (the gateway's window, the workers' `processed_events`) is keyed by
/// the event id, so each sender's id names who authenticated the delivery. A delivery authenticated as
/// one account that carries another account's ids is published beside that account's real one, and
/// never answered "already accepted" in its place.
@Suite("Event ids are scoped to whoever authenticated them: one account's delivery never deduplicates another's")
struct ScopedEventIdTests {
    static let json = ["Content-Type": "application/json"]

    /// The `ce_id` of every record on the events topic, in order.
    static func eventIds(_ harness: GatewayHarness) async throws -> [String] {
        try await harness.records(harness.topics.events).compactMap { record in
            record.headers.split(separator: ",").first { $0.hasPrefix("ce_id=") }.map { String($0.dropFirst("ce_id=".count)) }
        }
    }

    static func outcomes(_ harness: GatewayHarness, _ source: SourceName) async throws -> (published: Double, duplicate: Double) {
        (try await harness.metric("tollgate_deliveries_written_total", ["source": source.rawValue, "outcome": "published"]),
         try await harness.metric("tollgate_deliveries_written_total", ["source": source.rawValue, "outcome": "duplicate"]))
    }

    @Test("Citcon: an IPN signed with account shop's secret carrying other's ids does not pre-empt other's real one")
    func citcon() async throws {
        let harness = try await CitconEndToEndTests.harness()
        // The same Citcon id, type and status, first under shop's secret (on the shared route, where the
        // secret alone names the account), then other's real IPN on its own route.
        let forged = try await harness.client.request("POST", "/webhooks/citcon", headers: Self.json, body: CitconEndToEndTests.upi())
        let real = try await harness.client.request("POST", "/webhooks/citcon/other", headers: Self.json,
                                                    body: CitconEndToEndTests.upi(secret: "other-secret"))
        #expect(forged.status == 200)
        #expect(real.status == 200)
        #expect(try await Self.eventIds(harness) == ["citcon:shop:ipn-1:charge:success", "citcon:other:ipn-1:charge:success"])
        // An account's own redelivery is still deduplicated.
        #expect(try await harness.client.request("POST", "/webhooks/citcon/other", headers: Self.json,
                                                 body: CitconEndToEndTests.upi(secret: "other-secret")).status == 200)
        #expect(try await Self.eventIds(harness).count == 2)
        let outcomes = try await Self.outcomes(harness, .citcon)
        #expect(outcomes.published == 2 && outcomes.duplicate == 1)
        await harness.stop()
    }

    @Test("Iaptic: a callback with app shop's password carrying other's notification does not pre-empt other's real one")
    func iaptic() async throws {
        let harness = try await GatewayHarness { sources in
            sources.iaptic.apps.append(IapticSettings.App(name: "other", secrets: ["other-secret"]))
        }
        #expect(try await harness.postIaptic(Bodies.renewal()).status == 200)
        #expect(try await harness.postIaptic(Bodies.renewal(password: "other-secret")).status == 200)
        #expect(try await Self.eventIds(harness) == ["iaptic:shop:n-100:apple:1", "iaptic:other:n-100:apple:1"])
        #expect(try await harness.postIaptic(Bodies.renewal(password: "other-secret")).status == 200)
        #expect(try await Self.eventIds(harness).count == 2)
        let outcomes = try await Self.outcomes(harness, .iaptic)
        #expect(outcomes.published == 2 && outcomes.duplicate == 1)
        await harness.stop()
    }

    @Test("Alipay+: a notifyPayment signed for client A carrying B's paymentId does not pre-empt B's real one")
    func alipayPlus() async throws {
        let keyB = try #require(await offPool { PrivateKey.generateRSA() })
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("tollgate-scoped-ids-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        var paths: [String] = []
        for (name, key) in [("a.pem", AlipayPlusEndToEndTests.platformKey), ("b.pem", keyB)] {
            let pem = try #require(await offPool { key.publicKeyPEM })
            let path = folder.appendingPathComponent(name)
            try Data(pem.utf8).write(to: path)
            paths.append(path.path)
        }
        let harness = try await GatewayHarness { sources in
            sources.alipayplus.clients = [AlipayPlusSettings.Client(clientId: "CLIENT_A", platformPublicKeys: [.init(path: paths[0])]),
                                          AlipayPlusSettings.Client(clientId: "CLIENT_B", platformPublicKeys: [.init(path: paths[1])])]
        }
        let time = Timestamp.now.rfc3339
        let body = AlipayPlusEndToEndTests.body
        let forged = AlipayPlusEndToEndTests.headers(path: "/webhooks/alipayplus", clientId: "CLIENT_A", time: time, body: body)
        let real = AlipayPlusEndToEndTests.headers(path: "/webhooks/alipayplus", clientId: "CLIENT_B", time: time, body: body, key: keyB)
        #expect(try await harness.client.request("POST", "/webhooks/alipayplus", headers: forged, body: body).status == 200)
        #expect(try await harness.client.request("POST", "/webhooks/alipayplus", headers: real, body: body).status == 200)
        #expect(try await Self.eventIds(harness) == ["alipayplus:CLIENT_A:pay-5:PAYMENT_RESULT:S", "alipayplus:CLIENT_B:pay-5:PAYMENT_RESULT:S"])
        #expect(try await harness.client.request("POST", "/webhooks/alipayplus", headers: real, body: body).status == 200)
        #expect(try await Self.eventIds(harness).count == 2)
        let outcomes = try await Self.outcomes(harness, .alipayplus)
        #expect(outcomes.published == 2 && outcomes.duplicate == 1)
        await harness.stop()
    }

    @Test("Google: a push naming one subscription does not pre-empt the same message id pushed by another subscription")
    func google() async throws {
        let (harness, keys) = try await GoogleEndToEndTests.harness()
        let headers = ["Content-Type": "application/json", "Authorization": "Bearer \(GoogleEndToEndTests.token(keys))"]
        let first = GoogleEndToEndTests.envelope(GoogleEndToEndTests.renewed, messageId: "555", subscription: "projects/p/subscriptions/forged")
        let second = GoogleEndToEndTests.envelope(GoogleEndToEndTests.renewed, messageId: "555", subscription: "projects/p/subscriptions/rtdn")
        #expect(try await harness.client.request("POST", "/webhooks/google", headers: headers, body: first).status == 200)
        #expect(try await harness.client.request("POST", "/webhooks/google", headers: headers, body: second).status == 200)
        #expect(try await Self.eventIds(harness) == ["google:projects/p/subscriptions/forged:555", "google:projects/p/subscriptions/rtdn:555"])
        // The unwrapped form scopes by x-goog-pubsub-subscription-name the same way: a redelivery of the
        // second message is a duplicate.
        let unwrapped = try await harness.client.request("POST", "/webhooks/google", headers: headers.merging([
            "x-goog-pubsub-message-id": "555", "x-goog-pubsub-subscription-name": "projects/p/subscriptions/rtdn"]) { $1 },
            body: GoogleEndToEndTests.renewed)
        #expect(unwrapped.status == 200)
        #expect(try await Self.eventIds(harness).count == 2)
        let outcomes = try await Self.outcomes(harness, .google)
        #expect(outcomes.published == 2 && outcomes.duplicate == 1)
        await harness.stop()
    }
}
