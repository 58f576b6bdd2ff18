import Config
import Events
import Testing
@testable import Verifiers

@Suite("Citcon normalization")
struct CitconNormalizationTests {
    func event(_ overrides: [String: String], members: [(String, String)] = CitconFixtures.charge) async throws -> NormalizedEvent {
        let written = members.map { ($0.0, overrides[$0.0] ?? $0.1) }
        return try #require(try await CitconFixtures.source.handle(CitconFixtures.request(CitconFixtures.upi(written))).events.first)
    }

    @Test("transaction_type and status map to the vocabulary", arguments: [
        ("charge", "success", EventType.purchaseCompleted), ("charge", "captured", .purchaseCompleted),
        ("charge", "authorized", .purchaseAuthorized), ("charge", "fail", .purchaseFailed),
        ("charge", "cancelled", .purchaseCanceled), ("charge", "pending", .storeOther),
        ("refund", "success", .purchaseRefunded), ("refund", "fail", .storeOther),
        ("chargeback", "opened", .purchaseChargeback), ("vault", "success", .storeOther),
    ])
    func types(transactionType: String, status: String, expected: EventType) async throws {
        let event = try await event(["transaction_type": #""\#(transactionType)""#, "status": #""\#(status)""#])
        #expect(event.type == expected)
        #expect(event.id == "citcon:alpha:d0c1:\(transactionType):\(status)")
        #expect(event.sourceType == "\(transactionType)/\(status)")
    }

    @Test("the event carries reference, amounts in micros, times and the account")
    func fields() async throws {
        let event = try await event([:])
        #expect(event.subject == "order-7")
        #expect(event.app == "alpha")
        #expect(event.environment == .production)
        #expect(event.price == NormalizedEvent.Price(amountMicros: 19_990_000, currency: "USD"))
        #expect(event.occurredAt == "2026-11-20T10:00:05.000Z")
        #expect(event.receivedAt == "2026-11-21T12:00:00.000Z")
        #expect(event.transaction == NormalizedEvent.Transaction(id: "d0c1", purchasedAt: "2026-11-20T10:00:00.000Z"))
    }

    @Test("minor units follow the currency: zero-decimal JPY and KRW, three-decimal KWD", arguments: [
        ("JPY", "500", Int64(500_000_000)), ("KRW", "12000", 12_000_000_000), ("KWD", "1250", 1_250_000),
        ("usd", "1999", 19_990_000), ("EUR", "\"\"", nil),
    ] as [(String, String, Int64?)])
    func currencies(currency: String, amount: String, micros: Int64?) async throws {
        let event = try await event(["currency": #""\#(currency)""#, "amount": amount])
        #expect(event.price?.amountMicros == micros)
        if micros != nil { #expect(event.price?.currency == currency.uppercased()) }
    }

    @Test("a missing time falls back to the receive time")
    func noTime() async throws {
        let members = CitconFixtures.charge.filter { !$0.0.hasPrefix("time_") }
        let event = try #require(try await CitconFixtures.source.handle(CitconFixtures.request(CitconFixtures.upi(members))).events.first)
        #expect(event.occurredAt == "2026-11-21T12:00:00.000Z")
    }

    @Test("legacy times may be epoch seconds; notify_status maps like a charge status")
    func legacy() async throws {
        var pairs = CitconFixtures.legacyCharge.filter { $0.0 != "time" && $0.0 != "notify_status" }
        pairs += [("time", "1763629200"), ("notify_status", "fail")]
        let event = try #require(try await CitconFixtures.source.handle(
            CitconFixtures.request(CitconFixtures.legacy(pairs), contentType: "application/x-www-form-urlencoded")).events.first)
        #expect(event.occurredAt == "2025-11-20T09:00:00.000Z")
        #expect(event.type == .purchaseFailed)
        #expect(event.id == "citcon:alpha:c-42:charge:fail")
    }
}
