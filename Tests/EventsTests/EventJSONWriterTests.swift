@testable import Events
import Testing

/// `EventCoding.encode` is hand-written for speed; its bytes must stay those of the Codable encoding
/// with sorted keys that consumers and the byte-identical replay have always seen.
@Suite("The event JSON writer")
struct EventJSONWriterTests {
    typealias Generator = SystemRandomNumberGenerator

    /// Every character class JSON treats specially, and some it does not.
    static let alphabet: [String] = (0..<0x20).map { String(UnicodeScalar(UInt8($0))) }
        + ["\"", "\\", "/", "\u{7F}", "a", "Z", "0", " ", "{", "}", ":", ",", "é", "\u{2028}", "\u{2029}", "€", "𝄞", "👍🏽", "\u{FEFF}", "\u{0301}"]

    static func text(_ generator: inout Generator) -> String {
        String((0..<Int.random(in: 0...12, using: &generator)).map { _ in alphabet.randomElement(using: &generator) ?? "" }.joined())
    }

    static func maybe<T>(_ generator: inout Generator, _ make: (inout Generator) -> T) -> T? {
        Bool.random(using: &generator) ? make(&generator) : nil
    }

    static func event(_ g: inout Generator) -> NormalizedEvent {
        NormalizedEvent(
            id: text(&g), type: EventType.allCases.randomElement(using: &g) ?? .storeTest, source: text(&g),
            environment: Bool.random(using: &g) ? .production : .sandbox, app: text(&g), subject: text(&g),
            occurredAt: text(&g), receivedAt: text(&g), user: maybe(&g, text), product: maybe(&g, text),
            transaction: maybe(&g) { g in
                NormalizedEvent.Transaction(id: maybe(&g, text), originalId: maybe(&g, text), purchasedAt: maybe(&g, text),
                                            expiresAt: maybe(&g, text), revokedAt: maybe(&g, text),
                                            quantity: maybe(&g) { g in [Int.min, -1, 0, 1, 42, Int.max].randomElement(using: &g) ?? 0 },
                                            revocationType: maybe(&g) { g in [.refundFull, .refundProrated, .familyRevoke].randomElement(using: &g) ?? .refundFull },
                                            revocationPercentage: maybe(&g) { g in [0, 15, 40_000, 100_000].randomElement(using: &g) ?? 0 },
                                            offerType: maybe(&g, text), offerDiscountType: maybe(&g, text), appTransactionId: maybe(&g, text),
                                            billingPlan: maybe(&g, text),
                                            commitment: maybe(&g) { g in
                                                NormalizedEvent.Transaction.Commitment(period: maybe(&g) { _ in 3 }, periods: maybe(&g) { _ in 12 },
                                                                                       expiresAt: maybe(&g, text))
                                            })
            },
            price: maybe(&g) { g in
                NormalizedEvent.Price(amountMicros: [Int64.min, -990_000, 0, 4_990_000, Int64.max].randomElement(using: &g) ?? 0,
                                      currency: text(&g))
            },
            subscription: maybe(&g) { g in
                NormalizedEvent.Subscription(autoRenew: maybe(&g) { Bool.random(using: &$0) }, gracePeriodExpiresAt: maybe(&g, text),
                                             billingRetry: maybe(&g) { Bool.random(using: &$0) }, state: maybe(&g, text))
            },
            reason: maybe(&g, text), sourceType: text(&g))
    }

    @Test("equals the Codable encoding byte for byte, over 20,000 random events")
    func matchesCodable() {
        var generator = Generator()
        for _ in 0..<20_000 {
            let event = Self.event(&generator)
            let written = EventCoding.encode(event)
            let codable = EventCoding.encodeWithCodable(event)
            guard written == codable else {
                Issue.record("differs for \(event):\n\(String(decoding: written, as: UTF8.self))\n\(String(decoding: codable, as: UTF8.self))")
                return
            }
        }
    }

    @Test("an event decoded with an empty transaction or subscription still encodes as Codable does")
    func emptyNestedObjects() throws {
        let json = #"{"app":"a","environment":"sandbox","id":"i","occurredAt":"t","receivedAt":"t","source":"/s","sourceType":"x","subject":"s","subscription":{},"transaction":{},"type":"store.test"}"#
        let event = try EventCoding.decode(Array(json.utf8))
        #expect(EventCoding.encode(event) == EventCoding.encodeWithCodable(event))
        #expect(String(decoding: EventCoding.encode(event), as: UTF8.self) == json)
    }
}
