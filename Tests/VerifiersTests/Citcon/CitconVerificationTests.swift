import Config
import Events
import Foundation
import Rejections
import TestSupport
import Testing
@testable import Verifiers

@Suite("Citcon verification")
struct CitconVerificationTests {
    let source = CitconFixtures.source

    func reject(_ request: WebhookRequest) async -> (any ReasonCode)? {
        do {
            _ = try await source.handle(request)
            return nil
        } catch {
            return error.reason
        }
    }

    func reject(_ body: String, contentType: String? = "application/json", path: String = "/webhooks/citcon") async -> (any ReasonCode)? {
        await reject(CitconFixtures.request(body, contentType: contentType, path: path))
    }

    @Test("Citcon's published example (secret braintree) verifies and signs exactly the published string")
    func publishedExample() async throws {
        let body = #"{"id":"84571d30e61711eba6a94911fce35a55","transaction_type":"charge","reference":"reference132","amount":100,"currency":"USD","status":"authorized","time_completed":"2021-08-14T09:47:43.000Z","time_created":"2021-07-16T09:23:44.000Z","payment_method":"paypal","amount_captured":"","amount_refunded":"","fields":"id,transaction_type,reference,amount,currency,status,time_completed,time_created,payment_method,amount_captured,amount_refunded","sign":"621233f017ad8139fe97d47b4653735e121b9f6e7dafe3638eba0fcd80801db5"}"#
        let published = "amount=100&amount_captured=&amount_refunded=&currency=USD&fields=id,transaction_type,reference,amount,currency,status,time_completed,time_created,payment_method,amount_captured,amount_refunded&id=84571d30e61711eba6a94911fce35a55&payment_method=paypal&reference=reference132&status=authorized&time_completed=2021-08-14T09:47:43.000Z&time_created=2021-07-16T09:23:44.000Z&transaction_type=charge&secret=braintree"
        let signature = try CitconSignature(body: CitconBody.parse(Array(body.utf8), format: .upi))
        #expect(signature.signedText(secret: "braintree") == published)
        #expect(signature.expected(secret: "braintree") == "621233f017ad8139fe97d47b4653735e121b9f6e7dafe3638eba0fcd80801db5")

        var settings = CitconSettings()
        settings.accounts = [CitconSettings.Account(name: "demo", secrets: ["braintree"])]
        let delivery = try await CitconSource(settings: settings).handle(CitconFixtures.request(body))
        let event = try #require(delivery.events.first)
        #expect(event.id == "citcon:demo:84571d30e61711eba6a94911fce35a55:charge:authorized")
        #expect(event.type == .purchaseAuthorized)
        #expect(event.subject == "reference132")
        #expect(event.source == "/citcon/demo")
        #expect(event.price == NormalizedEvent.Price(amountMicros: 1_000_000, currency: "USD"))
        #expect(event.occurredAt == "2021-08-14T09:47:43.000Z")
        #expect(event.sourceType == "charge/authorized")
        #expect(delivery.response == SenderResponse(contentType: "text/plain", body: Array("ok".utf8)))
        #expect(await CitconSource(settings: settings).reason(CitconFixtures.request(body.replacingOccurrences(of: "\"amount\":100", with: "\"amount\":1000"))) == .badSignature)
    }

    @Test("a UPI IPN signed with either configured secret is accepted (rotation) and names its account")
    func rotation() async throws {
        let old = try await source.handle(CitconFixtures.request(CitconFixtures.upi(secret: "upi-old")))
        let new = try await source.handle(CitconFixtures.request(CitconFixtures.upi(secret: "upi-new")))
        let beta = try await source.handle(CitconFixtures.request(CitconFixtures.upi(secret: "beta-secret")))
        #expect(old.events.first?.source == "/citcon/alpha")
        #expect(new.events.first?.source == "/citcon/alpha")
        #expect(beta.events.first?.source == "/citcon/beta")
        #expect(new.events.first?.id == "citcon:alpha:d0c1:charge:success")
    }

    @Test("tampering, a wrong secret or a CHOP token in place of the UPI secret is 401 bad_signature")
    func tampered() async {
        #expect(await reject(CitconFixtures.upi(replacing: ["amount": "1"])) == .badSignature)
        #expect(await reject(CitconFixtures.upi(replacing: ["status": #""fail""#])) == .badSignature)
        #expect(await reject(CitconFixtures.upi(secret: "upi-newer")) == .badSignature)
        #expect(await reject(CitconFixtures.upi(secret: "chop-new")) == .badSignature)
        // Same number, other spelling: the signature covers the text as written.
        #expect(await reject(CitconFixtures.upi(replacing: ["amount": "1999.0"])) == .badSignature)
        #expect(await reject(CitconFixtures.upi(sign: String(repeating: "0", count: 64))) == .badSignature)
        #expect(WebhookReason.badSignature.httpStatus == 401)
    }

    @Test("an uppercase hex sign is the same signature")
    func uppercaseSign() async throws {
        let body = CitconFixtures.upi()
        let sign = try #require(body.range(of: #""sign":""#).map { body[$0.upperBound...].prefix(64) })
        #expect(await reject(body.replacingOccurrences(of: String(sign), with: sign.uppercased())) == nil)
    }

    @Test("a name listed in fields but absent is refused, for both formats")
    func listedFieldMissing() async {
        let members = CitconFixtures.charge.filter { $0.0 != "payment_method" }
        #expect(await reject(CitconFixtures.upi(members, fields: CitconFixtures.charge.map(\.0))) == .missingSignedField)
        let pairs = CitconFixtures.legacyCharge.filter { $0.0 != "notify_id" }
        #expect(await reject(CitconFixtures.legacy(pairs, fields: CitconFixtures.legacyCharge.map(\.0)),
                             contentType: "application/x-www-form-urlencoded") == .missingSignedField)
        #expect(WebhookReason.missingSignedField.httpStatus == 400)
    }

    @Test("the order of fields does not change what is signed, but re-ordering a signed fields value does")
    func reorderedFields() async {
        let reversed = CitconFixtures.charge.map(\.0).reversed().map { $0 }
        #expect(await reject(CitconFixtures.upi(fields: reversed)) == nil)
        let original = CitconFixtures.upi()
        let list = CitconFixtures.charge.map(\.0)
        let swapped = original.replacingOccurrences(of: list.joined(separator: ","), with: reversed.joined(separator: ","))
        #expect(swapped != original)
        #expect(await reject(swapped) == .badSignature)
    }

    @Test("values containing & and = are signed as received, for both formats")
    func ampersandAndEquals() async throws {
        var members = CitconFixtures.charge
        members.append(("note", #""a=1&b=2""#))
        let upi = try await source.handle(CitconFixtures.request(CitconFixtures.upi(members)))
        #expect(upi.events.count == 1)
        // Moving the "&b=2" into a separate member must not verify.
        #expect(await reject(CitconFixtures.upi(members, replacing: ["note": #""a=1""#])) == .badSignature)

        var pairs = CitconFixtures.legacyCharge
        pairs.append(("note", "x&y=z %+"))
        let legacy = try await source.handle(CitconFixtures.request(CitconFixtures.legacy(pairs), contentType: "application/x-www-form-urlencoded"))
        #expect(legacy.events.first?.id == "citcon:alpha:c-42:charge:success")
    }

    @Test("unsigned members are allowed but never used; unsigned identity fields are refused")
    func unsignedFields() async throws {
        var members = CitconFixtures.charge
        members.append(("extra", "null"))
        let signedOnly = CitconFixtures.charge.map(\.0).filter { $0 != "amount" }
        let event = try #require(try await source.handle(CitconFixtures.request(CitconFixtures.upi(members, fields: signedOnly))).events.first)
        #expect(event.price == nil, "an unsigned amount is not trusted")
        let noStatus = CitconFixtures.charge.map(\.0).filter { $0 != "status" }
        #expect(await reject(CitconFixtures.upi(fields: noStatus)) == .unsignedField)
    }

    @Test("a signed null, boolean, object or array is refused, not guessed at", arguments: ["null", "true", "false", #"{"a":1}"#, "[1]"])
    func undefinedValues(literal: String) async {
        var members = CitconFixtures.charge
        members.append(("odd", literal))
        #expect(await reject(CitconFixtures.upi(members)) == .invalidSignedValue)
    }

    @Test("shape errors: not JSON, no sign, no fields, an empty name in fields, a malformed form")
    func shapes() async {
        #expect(await reject("{not json") == .malformedJSON)
        #expect(await reject("[1]") == .malformedJSON)
        #expect(await reject(#"{"id":"1","fields":"id"}"#) == .missingSignature)
        #expect(await reject(#"{"id":"1","fields":"id","sign":""}"#) == .missingSignature)
        #expect(await reject(#"{"id":"1","sign":"00"}"#) == .missingField)
        #expect(await reject(#"{"id":"1","fields":"id,","sign":"00"}"#) == .invalidField)
        #expect(await reject(#"{"id":"1","fields":null,"sign":"00"}"#) == .invalidField)
        #expect(await reject("id=1&fields=id&sign=%zz", contentType: "application/x-www-form-urlencoded") == .malformedForm)
        #expect(await reject("id=1&id=2&fields=id&sign=00", contentType: "application/x-www-form-urlencoded") == .malformedForm)
        #expect(await reject("id=1&fields=id&sign=00", contentType: "text/xml") == .unsupportedMediaType)
    }

    @Test("the legacy CHOP form verifies with a token (either, for rotation), tampered or wrong-token forms do not")
    func legacy() async throws {
        let form = "application/x-www-form-urlencoded"
        let old = try await source.handle(CitconFixtures.request(CitconFixtures.legacy(token: "chop-old"), contentType: form))
        let event = try #require(old.events.first)
        #expect(event.id == "citcon:alpha:c-42:charge:success")
        #expect(event.type == .purchaseCompleted)
        #expect(event.subject == "order-9")
        #expect(event.price == NormalizedEvent.Price(amountMicros: 500_000_000, currency: "JPY"))
        #expect(event.occurredAt == "2026-11-20T09:00:00.000Z")
        #expect(old.response.body == Array("ok".utf8))
        #expect(await reject(CitconFixtures.legacy(token: "chop-new"), contentType: form) == nil)
        #expect(await reject(CitconFixtures.legacy(token: "upi-new"), contentType: form) == .badSignature)
        #expect(await reject(CitconFixtures.legacy(replacing: ["amount": "50000"]), contentType: form) == .badSignature)
        #expect(await reject(CitconFixtures.legacy(replacing: ["notify_status": "fail"]), contentType: form) == .badSignature)
    }

    @Test("without a content type the body decides between UPI JSON and the legacy form")
    func bodyDecides() async {
        #expect(await reject(CitconFixtures.upi(), contentType: nil) == nil)
        #expect(await reject(CitconFixtures.upi(), contentType: "text/plain") == nil)
        #expect(await reject(CitconFixtures.legacy(), contentType: nil) == nil)
        #expect(await reject(CitconFixtures.legacy(), contentType: "application/json") == .malformedJSON)
    }

    @Test("/webhooks/citcon/<account> checks only that account's secrets; an unknown account is 404")
    func accountRoute() async {
        #expect(await reject(CitconFixtures.upi(secret: "upi-new"), path: "/webhooks/citcon/alpha") == nil)
        #expect(await reject(CitconFixtures.upi(secret: "beta-secret"), path: "/webhooks/citcon/alpha") == .badSignature)
        #expect(await reject(CitconFixtures.upi(secret: "beta-secret"), path: "/proxy/webhooks/citcon/beta") == nil)
        #expect(await reject(CitconFixtures.upi(), path: "/webhooks/citcon/gamma") == .unknownAccount)
        #expect(WebhookReason.unknownAccount.httpStatus == 404)
    }

    @Test("an account with tokens only refuses UPI IPNs, clearly")
    func noSecretForFormat() async throws {
        var settings = CitconSettings()
        settings.accounts = [CitconSettings.Account(name: "old", tokens: ["t"])]
        do {
            _ = try await CitconSource(settings: settings).handle(CitconFixtures.request(CitconFixtures.upi()))
            Issue.record("accepted without a UPI secret")
        } catch {
            #expect(error.reason == .badSignature)
            #expect(error.message.contains("no UPI secret"))
        }
    }
}
