import Config
import Events
import Foundation
import ProviderAPIs
import Rejections
import TestSupport
import Testing
@testable import Toolkit
@testable import Verifiers

@Suite("Alipay+ / Antom verification")
struct AlipayPlusVerificationTests {
    typealias F = AlipayPlusFixtures
    let source = AlipayPlusFixtures.source

    @Test("a signed Antom notifyPayment is accepted and answered with the success body")
    func accepted() async throws {
        let delivery = try await source.handle(F.request(F.antomBody))
        let event = try #require(delivery.events.first)
        #expect(event.id == "alipayplus:\(F.clientId):20261121194010800100188820200000001:PAYMENT_RESULT:S")
        #expect(delivery.rawKey == "order-2026-11")
        #expect(String(decoding: delivery.response.body, as: UTF8.self)
                == #"{"result":{"resultCode":"SUCCESS","resultStatus":"S","resultMessage":"success"}}"#)
        #expect(delivery.response.status == 200)
        #expect(delivery.response.contentType == "application/json")
    }

    @Test("the response is signed with the merchant key: verifiable with its public key over POST <path>\\n<Client-Id>.<Response-Time>.<body>")
    func signedResponse() async throws {
        let response = try await source.handle(F.request(F.antomBody)).response
        let headers = Dictionary(response.headers.map { ($0.name, $0.value) }, uniquingKeysWith: { a, _ in a })
        #expect(response.headers.map(\.name) == ["Client-Id", "Response-Time", "Signature"])
        #expect(headers["Client-Id"] == F.clientId)
        let responseTime = try #require(headers["Response-Time"])
        #expect(responseTime == "2026-11-21T04:00:01.000Z")
        let signatureHeader = try #require(headers["Signature"])
        #expect(signatureHeader.hasPrefix("algorithm=RSA256,keyVersion=3,signature="))
        let encoded = String(signatureHeader.dropFirst("algorithm=RSA256,keyVersion=3,signature=".count))
        #expect(!encoded.contains("+") && !encoded.contains("/") && !encoded.contains("="), "URL-encoded")
        let signature = try #require(encoded.removingPercentEncoding.flatMap { Base64.decodeStandard($0) })
        let content = Array("POST \(F.path)\n\(F.clientId).\(responseTime).".utf8) + response.body
        let merchantPublic = try #require(F.merchantKey.publicKey)
        #expect(merchantPublic.verifyRSASHA256(message: content, signature: signature))
        #expect(!merchantPublic.verifyRSASHA256(message: content + [0x20], signature: signature))
        #expect(!(try #require(F.platformKey.publicKey)).verifyRSASHA256(message: content, signature: signature))
    }

    @Test("without a merchant key the answer is the same body with no signature headers")
    func unsignedResponse() async throws {
        let body = F.antomBody
        let request = F.request(body, headers: ["Client-Id": "versioned", "Signature": F.signature(body: body, clientId: "versioned")])
        let response = try await source.handle(request).response
        #expect(response.headers.isEmpty)
        #expect(String(decoding: response.body, as: UTF8.self) == AlipayPlusSource.responseBody)
    }

    @Test("a tampered body is 401 bad_signature")
    func tampered() async {
        let signature = F.signature(body: F.antomBody)
        let tampered = F.antomBody.replacingOccurrences(of: #""value":"1999""#, with: #""value":"19990""#)
        #expect(await source.reason(F.request(tampered, headers: ["Signature": signature])) == .badSignature)
        // Whitespace is part of the signed bytes too: no re-serialization happens before verifying.
        #expect(await source.reason(F.request(F.antomBody + " ", headers: ["Signature": signature])) == .badSignature)
    }

    @Test("a signed notifyRefund is accepted on the same route with the same answer; a forged or tampered one is 401 bad_signature")
    func refund() async throws {
        let delivery = try await source.handle(F.request(F.refundBody))
        #expect(delivery.events.map(\.type) == [.purchaseRefunded])
        #expect(delivery.rawKey == "rf-order-2026-11")
        #expect(String(decoding: delivery.response.body, as: UTF8.self) == AlipayPlusSource.responseBody)
        let forged = F.signature(body: F.refundBody, key: F.foreignKey)
        #expect(await source.reason(F.request(F.refundBody, headers: ["Signature": forged])) == .badSignature)
        // A failed refund turned into a successful one under the platform's signature of the failure.
        let signed = F.signature(body: F.refundFailureBody)
        let flipped = F.refundFailureBody.replacingOccurrences(of: #""refundStatus":"FAIL""#, with: #""refundStatus":"SUCCESS""#)
        #expect(await source.reason(F.request(flipped, headers: ["Signature": signed])) == .badSignature)
    }

    @Test("the signature covers the path: another path is 401, the path the sender called verifies")
    func wrongPath() async {
        let signed = F.signature(body: F.antomBody, path: "/notify/antom")
        #expect(await source.reason(F.request(F.antomBody, path: "/webhooks/alipayplus", headers: ["Signature": signed])) == .badSignature)
        #expect(await source.reason(F.request(F.antomBody, path: "/notify/antom", headers: ["Signature": signed])) == nil)
    }

    @Test("the signature covers Request-Time, whatever its format")
    func requestTime() async {
        #expect(await source.reason(F.request(F.antomBody, headers: ["Request-Time": "2026-11-21T12:00:01+08:00"])) == .badSignature)
        let millis = "1795233600000"
        let signed = F.signature(body: F.antomBody, requestTime: millis)
        #expect(await source.reason(F.request(F.antomBody, headers: ["Request-Time": millis, "Signature": signed])) == nil)
        #expect(await source.reason(F.request(F.antomBody, headers: ["Request-Time": nil])) == .missingField)
    }

    @Test("the signed Request-Time must be within the window: old and future-skewed are refused, fresh ones accepted")
    func requestTimeWindow() async {
        // F.receivedAt is 2026-11-21T04:00:01Z; the default window is 90000 s back and 300 s ahead.
        func reason(time: String, receivedAt: Timestamp = F.receivedAt, source: AlipayPlusSource = F.source) async -> (any ReasonCode)? {
            var request = F.request(F.antomBody, headers: ["Request-Time": time, "Signature": F.signature(body: F.antomBody, requestTime: time)])
            request.receivedAt = receivedAt
            request.now = receivedAt
            return await source.reason(request)
        }
        #expect(await reason(time: "2026-11-21T12:00:00+08:00") == nil, "fresh")
        #expect(await reason(time: "2026-11-20T03:00:02Z") == nil, "24 h 59 min old: a late retry is still accepted")
        #expect(await reason(time: "2026-11-20T02:59:59Z") == .requestTimeOutsideWindow, "25 h and 2 s old")
        #expect(await reason(time: "2025-11-21T12:00:00+08:00") == .requestTimeOutsideWindow, "a year old")
        #expect(await reason(time: "1763697600000") == .requestTimeOutsideWindow, "a year old, in epoch milliseconds")
        #expect(await reason(time: "2026-11-21T04:04:59Z") == nil, "within the clock skew")
        #expect(await reason(time: "2026-11-21T04:05:02Z") == .requestTimeOutsideWindow, "more than 300 s ahead")
        #expect(await reason(time: "yesterday") == .invalidField, "an age that cannot be told")
        // The window is the configured one, and 0 turns the check off.
        let narrow = AlipayPlusSource(clients: [AntomAccount(clientId: F.clientId, platformKeys: [.init(key: F.platformKey.publicKey!, keyVersion: nil)])],
                                      requestTimeWindow: RequestTimeWindow(maxAgeSeconds: 60, maxSkewSeconds: 0))
        #expect(await reason(time: "2026-11-21T03:59:30Z", source: narrow) == nil)
        #expect(await reason(time: "2026-11-21T03:58:00Z", source: narrow) == .requestTimeOutsideWindow)
        #expect(await reason(time: "2026-11-21T04:00:02Z", source: narrow) == .requestTimeOutsideWindow)
        let off = AlipayPlusSource(clients: [AntomAccount(clientId: F.clientId, platformKeys: [.init(key: F.platformKey.publicKey!, keyVersion: nil)])],
                                   requestTimeWindow: RequestTimeWindow(maxAgeSeconds: 0, maxSkewSeconds: 0))
        #expect(await reason(time: "2020-01-01T00:00:00Z", source: off) == nil)
        #expect(await reason(time: "yesterday", source: off) == nil)
        // Checked after the signature: an unsigned stale time is a bad signature, not a window refusal.
        #expect(await F.source.reason(F.request(F.antomBody, headers: ["Request-Time": "2020-01-01T00:00:00Z"])) == .badSignature)
        #expect(WebhookReason.requestTimeOutsideWindow.httpStatus == 401)
    }

    @Test("a signature that is not URL-encoded is refused as malformed")
    func notURLEncoded() async throws {
        // Find a body whose base64 signature has a character URL encoding changes ('+', '/' or '='; 2048-bit
        // signatures always end with '=' padding, so the first try does).
        let raw = F.signature(body: F.antomBody, urlEncoded: false)
        #expect(raw.hasSuffix("="))
        #expect(await source.reason(F.request(F.antomBody, headers: ["Signature": raw])) == .malformedSignature)
        #expect(await source.reason(F.request(F.antomBody, headers: ["Signature": "algorithm=RSA256,keyVersion=1,signature=%ZZ"])) == .malformedSignature)
        #expect(await source.reason(F.request(F.antomBody, headers: ["Signature": "algorithm=RSA256,keyVersion=1,signature=QUJD%3"])) == .malformedSignature)
        #expect(WebhookReason.malformedSignature.httpStatus == 400)
    }

    @Test("keyVersion selects the configured key; an unknown keyVersion is refused clearly")
    func keyVersions() async {
        func request(key: PrivateKey, version: String?) -> WebhookRequest {
            F.request(F.antomBody, headers: ["Client-Id": "versioned",
                                             "Signature": F.signature(body: F.antomBody, clientId: "versioned", key: key, keyVersion: version)])
        }
        #expect(await source.reason(request(key: F.platformKey, version: "1")) == nil)
        #expect(await source.reason(request(key: F.rotatedPlatformKey, version: "2")) == nil)
        #expect(await source.reason(request(key: F.rotatedPlatformKey, version: "1")) == .badSignature)
        #expect(await source.reason(request(key: F.rotatedPlatformKey, version: nil)) == nil, "no keyVersion: every key is tried")
        #expect(await source.reason(request(key: F.platformKey, version: "7")) == .unknownKeyVersion)
        #expect(await source.reason(request(key: F.platformKey, version: "x")) == .malformedSignature)
        #expect(WebhookReason.unknownKeyVersion.httpStatus == 401)
        // An unversioned key answers to any keyVersion.
        #expect(await source.reason(F.request(F.antomBody, headers: ["Signature": F.signature(body: F.antomBody, keyVersion: "42")])) == nil)
    }

    @Test("unknown Client-Id is 403, a missing one 400, a missing or foreign signature 401")
    func identities() async {
        #expect(await source.reason(F.request(F.antomBody, headers: ["Client-Id": "someone-else"])) == .unknownClient)
        #expect(WebhookReason.unknownClient.httpStatus == 403)
        #expect(await source.reason(F.request(F.antomBody, headers: ["Client-Id": nil])) == .missingField)
        #expect(await source.reason(F.request(F.antomBody, headers: ["Signature": nil])) == .missingSignature)
        #expect(await source.reason(F.request(F.antomBody, headers: ["Signature": "algorithm=RSA256,keyVersion=1"])) == .missingSignature)
        #expect(WebhookReason.missingSignature.httpStatus == 401)
        #expect(await source.reason(F.request(F.antomBody, headers: ["Signature": F.signature(body: F.antomBody, key: F.foreignKey)])) == .badSignature)
        let other = F.signature(body: F.antomBody).replacingOccurrences(of: "RSA256", with: "RSA512")
        #expect(await source.reason(F.request(F.antomBody, headers: ["Signature": other])) == .unsupportedAlg)
    }

    @Test("a verified body that is not a notifyPayment is 400, never a crash")
    func shapes() async {
        for body in ["[]", "{}", #"{"notifyType":"PAYMENT_RESULT","paymentId":"p","paymentRequestId":"r"}"#,
                     #"{"notifyType":"PAYMENT_RESULT","result":{"resultStatus":"S"},"paymentId":"p"}"#,
                     #"{"notifyType":true,"result":{"resultStatus":"S"},"paymentId":"p","paymentRequestId":"r"}"#] {
            let reason = await source.reason(F.request(body))
            #expect(reason == .malformedJSON || reason == .missingField || reason == .invalidField, "\(body)")
        }
        #expect(await source.reason(F.request(F.antomBody, headers: ["Content-Type": "application/xml"])) == .unsupportedMediaType)
    }
}
