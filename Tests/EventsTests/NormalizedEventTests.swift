import Events
import Foundation
import Testing

@Suite("The normalized event")
struct NormalizedEventTests {
    let event = NormalizedEvent(
        id: "iaptic:n1:p1", type: .subscriptionRenewed, source: "/iaptic/demo", environment: .sandbox, app: "demo",
        subject: "p1", occurredAt: "2026-01-01T00:00:00.000Z", receivedAt: "2026-01-01T00:00:01.000Z",
        transaction: NormalizedEvent.Transaction(), subscription: NormalizedEvent.Subscription(autoRenew: true),
        sourceType: "purchases.updated/RENEWED")

    @Test("absent fields are left out of the JSON, never null")
    func absentNotNull() throws {
        let json = String(decoding: EventCoding.encode(event), as: UTF8.self)
        #expect(!json.contains("null"))
        #expect(!json.contains("transaction"), "an empty transaction is dropped")
        #expect(!json.contains("\"user\""))
        #expect(json.contains(#""source":"/iaptic/demo""#), "slashes are not escaped")
        #expect(json.contains(#""subscription":{"autoRenew":true}"#))
    }

    @Test("encoding round-trips")
    func roundTrip() throws {
        #expect(try EventCoding.decode(EventCoding.encode(event)) == event)
    }

    @Test("CloudEvents binary-mode headers carry the attributes")
    func headers() {
        let headers = Dictionary(uniqueKeysWithValues: CloudEventHeaders.headers(for: event).map { ($0.name, $0.value) })
        #expect(headers == [
            "ce_specversion": "1.0", "ce_id": "iaptic:n1:p1", "ce_source": "/iaptic/demo",
            "ce_type": "dev.tollgate.subscription.renewed", "ce_subject": "p1",
            "ce_time": "2026-01-01T00:00:00.000Z", "content-type": "application/json",
        ])
    }

    @Test("every vocabulary type round-trips through ce_type")
    func vocabulary() {
        for type in EventType.allCases {
            #expect(EventType(cloudEventType: type.cloudEventType) == type)
        }
        #expect(EventType(cloudEventType: "dev.tollgate.nope") == nil)
        #expect(EventType.allCases.count == 35)
    }

    @Test("topic names follow the prefix")
    func topics() {
        let names = TopicNames(prefix: "acme", sources: [SourceName("one"), SourceName("two")])
        #expect(names.raw(SourceName("one")) == "acme.raw.one")
        #expect(names.events == "acme.events")
        #expect(names.retry(delayMs: 5000) == "acme.events-retry-5000")
        #expect(names.deadLetter == "acme.events-dlt")
        #expect(names.all.filter(\.compacted).map(\.name) == ["acme.entitlements"])
        #expect(names.all.map(\.name).prefix(2) == ["acme.raw.one", "acme.raw.two"])
        #expect(names.audit == "acme.audit")
        #expect(names.all.count == 2 + 1 + 3 + 4)
    }
}
