import Events
import Foundation
import Testing

@Suite("Iaptic end to end: HTTP -> verify -> normalize -> Kafka")
struct IapticEndToEndTests {
    @Test("an authentic delivery is answered {\"ok\":true} after the raw body and the event are on their topics")
    func accepted() async throws {
        let harness = try await GatewayHarness()
        let body = Bodies.renewal()
        let response = try await harness.postIaptic(body)
        #expect(response.status == 200)
        #expect(response.body == #"{"ok":true}"#)
        #expect(response.headers["content-type"] == "application/json")

        // The 2xx came after the delivery reports: the records are already readable.
        let raw = try await harness.records(harness.topics.raw(.iaptic))
        #expect(raw.count == 1)
        // Keyed by the user: a callback lists all their purchases.
        #expect(raw.first?.key == "shop/u-1")
        // The raw topic holds the body without its password (the app's secret), as canonical JSON.
        #expect(raw.first?.value.contains("password") == false)
        #expect(raw.first?.value.contains(#""applicationUsername":"u-1""#) == true)
        #expect(raw.first?.headers.contains("tollgate_authenticated_scope=shop") == true)
        #expect(raw.first?.headers.contains("ce_id=iaptic:shop:n-100:apple:1") == true)
        #expect(raw.first?.headers.contains("http_content-type=application/json") == true)

        let events = try await harness.records(harness.topics.events)
        let event = try #require(events.first)
        #expect(events.count == 1)
        #expect(event.key == "apple:1")
        for header in ["ce_specversion=1.0", "ce_id=iaptic:shop:n-100:apple:1", "ce_source=/iaptic/shop",
                       "ce_type=dev.tollgate.subscription.renewed", "ce_subject=apple:1", "content-type=application/json"] {
            #expect(event.headers.contains(header), "missing \(header)")
        }
        let decoded = try EventCoding.decode(Array(event.value.utf8))
        #expect(decoded.type == .subscriptionRenewed)
        #expect(decoded.user == "u-1")
        #expect(try await harness.metric("tollgate_deliveries_accepted_total", ["source": "iaptic"]) == 1)
        #expect(try await harness.metric("tollgate_http_requests_total", ["route": "/webhooks/iaptic", "status": "200"]) == 1)
        await harness.stop()
    }

    @Test("a repeated delivery is answered 2xx with the same body and published once (deduplication window)")
    func repeatedDelivery() async throws {
        let harness = try await GatewayHarness()
        let first = try await harness.postIaptic(Bodies.renewal())
        let second = try await harness.postIaptic(Bodies.renewal())
        #expect(first.status == 200)
        #expect(second.status == 200)
        #expect(second.body == first.body)
        let ids = try await harness.records(harness.topics.events).map { record in
            record.headers.split(separator: ",").first { $0.hasPrefix("ce_id=") }.map(String.init)
        }
        #expect(ids == ["ce_id=iaptic:shop:n-100:apple:1"])
        #expect(try await harness.records(harness.topics.raw(.iaptic)).count == 1)
        #expect(try await harness.metric("tollgate_deliveries_written_total", ["source": "iaptic", "outcome": "published"]) == 1)
        #expect(try await harness.metric("tollgate_deliveries_written_total", ["source": "iaptic", "outcome": "duplicate"]) == 1)
        // Another notification about the same purchase is a new event: published.
        #expect(try await harness.postIaptic(Bodies.renewal(notificationId: "n-101")).status == 200)
        #expect(try await harness.records(harness.topics.events).count == 2)
        await harness.stop()
    }

    @Test("the test notification is published as store.test")
    func testNotification() async throws {
        let harness = try await GatewayHarness()
        let response = try await harness.postIaptic(#"{"type":"test","password":"\#(GatewayHarness.secret)"}"#)
        #expect(response.status == 200)
        let events = try await harness.records(harness.topics.events)
        #expect(events.count == 1)
        #expect(events.first?.headers.contains("ce_type=dev.tollgate.store.test") == true)
        await harness.stop()
    }

    @Test("when Kafka cannot acknowledge in time the sender gets 503 with Retry-After, never a 2xx")
    func brokerDown() async throws {
        let harness = try await GatewayHarness(ackTimeoutMs: 1_000)
        #expect(try await harness.postIaptic(Bodies.renewal()).status == 200)
        harness.cluster.setAllBrokers(up: false)
        let started = ContinuousClock.now
        let response = try await harness.postIaptic(Bodies.renewal(notificationId: "n-200"))
        #expect(response.status == 503)
        #expect(response.headers["retry-after"] == "5")
        #expect(response.body.contains("not_durable"))
        // A generous bound (the test machine is shared): what matters is that the answer comes
        // from kafka.ackTimeoutMs (1 s here), not after minutes.
        #expect(ContinuousClock.now - started < .seconds(30))
        #expect(try await harness.metric("tollgate_rejections_total", ["source": "iaptic", "reason": "not_durable"]) == 1)
        await harness.stop()
    }
}
