import Events
import Foundation
@testable import Merchant
import Testing

/// The purchase answer, the entitlement API's body and the `tollgate.entitlements` value are written by
/// hand (`SortedJSON`); their bytes must stay those `JSONEncoder` with sorted keys wrote before.
@Suite("Hand-written answers equal the Codable encoding")
struct AnswerJSONTests {
    typealias Generator = SystemRandomNumberGenerator

    /// Every character class JSON treats specially, and some it does not.
    static let alphabet: [String] = (0..<0x20).map { String(UnicodeScalar(UInt8($0))) }
        + ["\"", "\\", "/", "\u{7F}", "a", "Z", "0", " ", "{", "é", "\u{2028}", "€", "𝄞", "👍🏽", "\u{FEFF}"]

    static func text(_ g: inout Generator) -> String {
        (0..<Int.random(in: 0...10, using: &g)).map { _ in alphabet.randomElement(using: &g) ?? "" }.joined()
    }

    static func maybe<T>(_ g: inout Generator, _ make: (inout Generator) -> T) -> T? {
        Bool.random(using: &g) ? make(&g) : nil
    }

    static func list<T>(_ g: inout Generator, _ make: (inout Generator) -> T) -> [T] {
        (0..<Int.random(in: 0...3, using: &g)).map { _ in make(&g) }
    }

    static func item(_ g: inout Generator) -> EntitlementAPI.Body.Item {
        .init(product: text(&g), source: text(&g), purchaseId: text(&g), state: text(&g), expiresAt: maybe(&g, text),
              gracePeriodExpiresAt: maybe(&g, text))
    }

    static func access(_ g: inout Generator) -> EntitlementAPI.Body.Access {
        .init(name: text(&g), products: list(&g, text), expiresAt: maybe(&g, text))
    }

    static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }()

    static func same(_ written: [UInt8], _ value: some Encodable) throws -> Bool {
        let codable = Array(try encoder.encode(value))
        if written != codable {
            Issue.record("differs:\n\(String(decoding: written, as: UTF8.self))\n\(String(decoding: codable, as: UTF8.self))")
        }
        return written == codable
    }

    @Test("a purchase's answer, over 5,000 random answers")
    func purchaseAnswer() throws {
        var g = Generator()
        for _ in 0..<5_000 {
            let purchases = Self.list(&g) { g in
                (store: Self.text(&g), purchaseId: Self.text(&g), product: Self.text(&g), kind: Self.text(&g), type: Self.text(&g),
                        expiresAt: Self.maybe(&g, Self.text))
            }
            var answer = PurchasesAPI.Answer(user: Self.text(&g), app: Self.text(&g), environment: Self.text(&g), purchases: [],
                                             eventIds: Self.list(&g, Self.text))
            answer.purchases = purchases.map {
                PurchasesAPI.Answer.Item(store: $0.store, purchaseId: $0.purchaseId, product: $0.product, kind: $0.kind, type: $0.type,
                                         expiresAt: $0.expiresAt)
            }
            answer.access = Self.maybe(&g) { g in Self.list(&g, Self.access) }
            answer.entitlements = Self.maybe(&g) { g in Self.list(&g, Self.item) }
            guard try Self.same(SortedJSON.encode(answer.json), answer) else { return }
        }
    }

    @Test("the entitlement API's body, over 5,000 random bodies")
    func entitlementBody() throws {
        var g = Generator()
        for _ in 0..<5_000 {
            let body = EntitlementAPI.Body(user: Self.text(&g), app: Self.text(&g), environment: Self.text(&g),
                                           access: Self.list(&g, Self.access), entitlements: Self.list(&g, Self.item))
            guard try Self.same(SortedJSON.encode(body.json), body) else { return }
        }
    }

    @Test("a tollgate.entitlements value, over 5,000 random values")
    func entitlementValue() throws {
        var g = Generator()
        for _ in 0..<5_000 {
            let value = EntitlementJSON.Value(
                app: Self.text(&g), environment: Self.text(&g), user: Self.text(&g), product: Self.text(&g), source: Self.text(&g),
                purchaseId: Self.text(&g), state: Self.text(&g), access: Self.maybe(&g) { g in Self.list(&g, Self.text) },
                active: Bool.random(using: &g), transferredFrom: Self.maybe(&g, Self.text), transferredTo: Self.maybe(&g, Self.text),
                expiresAt: Self.maybe(&g, Self.text), gracePeriodExpiresAt: Self.maybe(&g, Self.text),
                quantity: Self.maybe(&g) { g in [Int.min, -1, 0, 7, Int.max].randomElement(using: &g) ?? 0 },
                changedAt: Self.text(&g), eventId: Self.text(&g), sequence: [Int64.min, 0, 1, Int64.max].randomElement(using: &g) ?? 0)
            guard try Self.same(SortedJSON.encode(value.json), value) else { return }
        }
    }
}
