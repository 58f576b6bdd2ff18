import Events
import Foundation
import Rejections
import TestSupport
import Testing
import Verifiers

@Suite("Iaptic verification")
struct IapticVerificationTests {
    let source = IapticFixtures.source

    func reject(_ body: String, contentType: String? = "application/json") async -> (any ReasonCode)? {
        do {
            _ = try await source.handle(IapticFixtures.request(body, contentType: contentType))
            return nil
        } catch {
            return error.reason
        }
    }

    @Test("every configured secret is accepted (rotation) and names its app")
    func rotation() async throws {
        let old = try await source.handle(IapticFixtures.request(IapticFixtures.updated(password: "old-secret")))
        let new = try await source.handle(IapticFixtures.request(IapticFixtures.updated(password: "new-secret")))
        let beta = try await source.handle(IapticFixtures.request(IapticFixtures.updated(password: "beta-secret")))
        #expect(old.events.first?.app == "alpha")
        #expect(new.events.first?.app == "alpha")
        #expect(beta.events.first?.source == "/iaptic/beta")
        #expect(new.response == .json(#"{"ok":true}"#))
    }

    @Test("a wrong, empty, missing or non-text password is 401")
    func passwords() async {
        #expect(await reject(IapticFixtures.updated(password: "new-secreT")) == .wrongPassword)
        #expect(await reject(IapticFixtures.updated(password: "new-secret ")) == .wrongPassword)
        #expect(await reject(IapticFixtures.updated(password: "")) == .missingPassword)
        #expect(await reject(#"{"type":"test"}"#) == .missingPassword)
        #expect(await reject(#"{"type":"test","password":42}"#) == .missingPassword)
        #expect(WebhookReason.wrongPassword.httpStatus == 401)
    }

    @Test("the password is checked before anything else is read")
    func authenticationFirst() async {
        #expect(await reject(#"{"password":"nope","purchases":5}"#) == .wrongPassword)
    }

    @Test("what is not a JSON object is 400", arguments: [
        "", "not json", "[1,2]", "\"text\"", #"{"type":"test","password":"new-secret"} trailing"#, "{\"type\":",
    ])
    func malformed(body: String) async {
        #expect(await reject(body) == .malformedJSON)
        #expect(CommonReason.malformedJSON.httpStatus == 400)
    }

    @Test("shape errors are 400 and say where")
    func shapeErrors() async {
        #expect(await reject(#"{"password":"new-secret"}"#) == .missingField)
        #expect(await reject(#"{"type":"purchases.updated","password":"new-secret","purchases":[]}"#) == .invalidField)
        #expect(await reject(#"{"type":"purchases.updated","password":"new-secret","purchases":{"p":5}}"#) == .invalidField)
        #expect(await reject(IapticFixtures.updated(purchases: [("p", #"{"productId":"p"}"#)])) == .missingField)
    }

    /// docs/openapi.yaml types these fields; a value of another type is refused, for every `type`, never
    /// ignored (schemathesis found `notification.transactionId` as an object accepted).
    @Test("a field of another type than the document gives is 400 invalid_field", arguments: [
        #"{"type":"purchases.updated","password":"new-secret","notification":{"transactionId":{}}}"#,
        #"{"type":"purchases.updated","password":"new-secret","notification":{"id":5}}"#,
        #"{"type":"purchases.updated","password":"new-secret","notification":[]}"#,
        #"{"type":"purchases.updated","password":"new-secret","applicationUsername":42}"#,
        #"{"type":"test","password":"new-secret","purchases":5}"#,
        #"{"type":"test","password":"new-secret","notification":{"date":null}}"#,
    ])
    func mistypedFields(body: String) async {
        #expect(await reject(body) == .invalidField)
    }

    @Test("every purchase needs a purchaseId, whatever the type")
    func purchaseIdForEveryType() async {
        #expect(await reject(#"{"type":"test","password":"new-secret","purchases":{"p":{"productId":"p"}}}"#) == .missingField)
    }

    @Test("a contradicting content type is 415; missing or generic ones are not")
    func contentTypes() async {
        let body = IapticFixtures.updated()
        #expect(await reject(body, contentType: "application/xml") == .unsupportedMediaType)
        #expect(await reject(body, contentType: "application/x-www-form-urlencoded") == .unsupportedMediaType)
        #expect(await reject(body, contentType: nil) == nil)
        #expect(await reject(body, contentType: "text/plain; charset=utf-8") == nil)
        #expect(await reject(body, contentType: "application/json; charset=UTF-8") == nil)
        #expect(CommonReason.unsupportedMediaType.httpStatus == 415)
    }
}

@Suite("Iaptic normalization")
struct IapticNormalizationTests {
    let source = IapticFixtures.source

    func events(_ body: String) async throws -> [NormalizedEvent] {
        try await source.handle(IapticFixtures.request(body)).events
    }

    @Test("a renewal becomes one fully populated event")
    func renewal() async throws {
        let event = try #require(try await events(IapticFixtures.updated()).first)
        #expect(event.id == "iaptic:alpha:n-1:apple:1000")
        #expect(event.type == .subscriptionRenewed)
        #expect(event.source == "/iaptic/alpha")
        #expect(event.app == "alpha")
        #expect(event.environment == .sandbox)
        #expect(event.subject == "apple:1000")
        #expect(event.user == "user-1")
        #expect(event.product == "apple:monthly")
        #expect(event.occurredAt == "2026-11-20T08:00:00.000Z")
        #expect(event.receivedAt == "2026-11-21T12:00:00.000Z")
        #expect(event.transaction?.id == "apple:1000-t")
        #expect(event.transaction?.expiresAt == "2026-12-01T00:00:00.000Z")
        #expect(event.price == NormalizedEvent.Price(amountMicros: 4_990_000, currency: "EUR"))
        #expect(event.subscription?.autoRenew == true)
        #expect(event.subscription?.state == "active")
        #expect(event.sourceType == "purchases.updated/RENEWED")
    }

    @Test("a redelivery produces the same ce_id, whenever it arrives")
    func deterministicIds() async throws {
        let body = IapticFixtures.updated()
        let first = try await source.handle(IapticFixtures.request(body)).events.map(\.id)
        let later = try await source.handle(IapticFixtures.request(body, receivedAt: Timestamp(millisecondsSince1970: 0))).events.map(\.id)
        #expect(first == later)
    }

    @Test("without a notification id the id hashes the purchase state")
    func hashedIds() async throws {
        let a = try await events(IapticFixtures.updated(notificationId: nil)).map(\.id)
        let b = try await events(IapticFixtures.updated(notificationId: nil)).map(\.id)
        let changed = try await events(IapticFixtures.updated(notificationId: nil, purchases: [
            ("apple:monthly", IapticFixtures.purchase(extra: #","isExpired":true"#))])).map(\.id)
        #expect(a == b)
        #expect(a != changed)
        #expect(a.first?.hasPrefix("iaptic:alpha:") == true && a.first?.hasSuffix(":apple:1000") == true)
    }

    @Test("the reason applies to the purchase it names; the others are snapshots")
    func targeting() async throws {
        let body = IapticFixtures.updated(reason: "EXPIRED", notificationTarget: "apple:2000", purchases: [
            ("apple:monthly", IapticFixtures.purchase(id: "apple:1000")),
            ("apple:yearly", IapticFixtures.purchase(id: "apple:2000", product: "apple:yearly")),
        ])
        let byId = Dictionary(uniqueKeysWithValues: try await events(body).map { ($0.subject, $0.type) })
        #expect(byId == ["apple:1000": .subscriptionUpdated, "apple:2000": .subscriptionExpired])
    }

    @Test("a notification that names no purchase applies to all")
    func untargeted() async throws {
        let body = IapticFixtures.updated(reason: "REFUNDED", notificationTarget: nil, purchases: [
            ("a", IapticFixtures.purchase(id: "apple:1", subscription: false)),
            ("b", IapticFixtures.purchase(id: "apple:2", subscription: false)),
        ])
        #expect(try await events(body).map(\.type) == [.purchaseRefunded, .purchaseRefunded])
    }

    @Test("reasons map to the vocabulary", arguments: [
        ("PURCHASED", true, EventType.subscriptionStarted),
        ("PURCHASED", false, .purchaseCompleted),
        ("RENEWED", true, .subscriptionRenewed),
        ("ENTERED_GRACE_PERIOD", true, .subscriptionBillingIssue),
        ("WILL_LAPSE", true, .subscriptionAutoRenewDisabled),
        ("WILL_AUTO_RENEW", true, .subscriptionAutoRenewEnabled),
        ("EXPIRED", true, .subscriptionExpired),
        ("PAUSED", true, .subscriptionPaused),
        ("REVOKED", true, .subscriptionRevoked),
        ("EXTENDED", true, .subscriptionExtended),
        ("PRICE_CHANGE_CONFIRMED", true, .subscriptionPriceChange),
        ("REFUNDED", false, .purchaseRefunded),
        ("RECEIPT_VALIDATED", true, .subscriptionUpdated),
        ("SOMETHING_NEW", true, .storeOther),
    ])
    func reasons(reason: String, subscription: Bool, type: EventType) async throws {
        let body = IapticFixtures.updated(reason: reason, purchases: [("apple:monthly", IapticFixtures.purchase(subscription: subscription))])
        #expect(try await events(body).map(\.type) == [type])
    }

    @Test("no reason at all is a snapshot")
    func noReason() async throws {
        #expect(try await events(IapticFixtures.updated(reason: nil)).map(\.type) == [.subscriptionUpdated])
    }

    @Test("type is compared case-insensitively; test becomes store.test")
    func testNotification() async throws {
        let delivery = try await IapticFixtures.source.handle(IapticFixtures.request(#"{"type":"TEST","password":"beta-secret"}"#))
        let event = try #require(delivery.events.first)
        #expect(delivery.events.count == 1)
        #expect(event.type == .storeTest)
        #expect(event.app == "beta")
        #expect(event.id.hasPrefix("iaptic:beta:test:"))
        #expect(try await events(IapticFixtures.updated().replacingOccurrences(of: "purchases.updated", with: "Purchases.Updated")).count == 1)
    }

    @Test("an unknown authentic type is kept as store.other")
    func unknownType() async throws {
        let event = try #require(try await events(#"{"type":"subscriber.deleted","password":"new-secret","applicationUsername":"u"}"#).first)
        #expect(event.type == .storeOther)
        #expect(event.sourceType == "subscriber.deleted")
    }
}
