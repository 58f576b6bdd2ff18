import Events
import Foundation
import Outbound
import TestSupport
import Testing
import Toolkit

/// The Antom fake refuses what Antom refuses (its API overview: `Client-Id`, `Request-Time` and
/// `Signature` are required and checked first; a request id answered S or F answers the same again,
/// and with other content REPEAT_REQ_INCONSISTENT), in every mode a test may set.
@Suite("Fake Antom refuses what Antom refuses")
struct FakeAntomTests {
    static let clientId = "CLIENT_FAKE_ANTOM_01"

    struct Call {
        let antom: FakeAntom
        let merchant: PrivateKey

        /// One signed request as Tollgate's client sends it; `clientId`, `time` and `sign` alter it.
        func send(_ path: String, _ body: String, clientId: String = FakeAntomTests.clientId, time: String? = nil,
                  signWith key: PrivateKey? = nil) async throws -> (status: Int, result: String?, body: JSONValue?) {
            let requestTime = time ?? String(Timestamp.now.millisecondsSince1970)
            let content = FakeAntom.content(path: path, clientId: clientId, time: requestTime, body: Array(body.utf8))
            let signature = (key ?? merchant).signRSASHA256(content) ?? []
            let headers = [("Content-Type", "application/json; charset=UTF-8"), ("Client-Id", clientId), ("Request-Time", requestTime),
                           ("Signature", "algorithm=RSA256,keyVersion=1,signature=" + FakeAntom.urlEncode(Base64.encodeStandard(signature)))]
            let answer = try await HTTPClientFetcher().fetch(HTTPFetchRequest(url: antom.baseURL + path, method: "POST", headers: headers,
                                                                              body: Array(body.utf8), timeout: .seconds(10)))
            let json = JSONValue.parse(answer.body)
            return (answer.status, json?["result"]?["resultCode"]?.string, json)
        }
    }

    static func pay(_ id: String, amount: String = "1999") -> String {
        #"{"paymentRequestId":"\#(id)","paymentAmount":{"currency":"USD","value":"\#(amount)"},"order":{"orderDescription":"x"}}"#
    }

    static func refund(_ id: String, paymentId: String) -> String {
        #"{"refundRequestId":"\#(id)","paymentId":"\#(paymentId)","refundAmount":{"currency":"USD","value":"1999"}}"#
    }

    @Test("another Client-Id, no Request-Time, a signature that does not verify (in every mode), a reused id with other content, a refund of a payment it never took")
    func refusals() async throws {
        let (merchant, platform, stranger) = await offPool { (PrivateKey.generateRSA()!, PrivateKey.generateRSA()!, PrivateKey.generateRSA()!) }
        let publicKey = try #require(PublicKey.load(pemOrDER: Array((merchant.publicKeyPEM ?? "").utf8)))
        let antom = FakeAntom(merchantPublicKey: publicKey, platformKey: platform, clientId: Self.clientId)
        defer { antom.stop() }
        let call = Call(antom: antom, merchant: merchant)

        #expect(try await call.send(FakeAntom.path, Self.pay("r-1"), clientId: "CLIENT_NOBODY").result == "INVALID_CLIENT")
        #expect(try await call.send(FakeAntom.path, Self.pay("r-1"), time: "").result == "PARAM_ILLEGAL")
        for mode in [FakeAntom.Mode.pay, .refuse, .unknown, .wronglySigned, .serverError] {
            antom.set(mode)
            let forged = try await call.send(FakeAntom.path, Self.pay("r-2"), signWith: stranger)
            #expect(forged.status == 200 && forged.result == "INVALID_SIGNATURE", "\(mode): \(forged)")
        }
        for mode in [FakeAntom.RefundMode.succeed, .inProcess, .refuse, .serverError] {
            antom.set(mode)
            let forged = try await call.send(FakeAntom.refundPath, Self.refund("f-1", paymentId: "pay-r-3"), signWith: stranger)
            #expect(forged.status == 200 && forged.result == "INVALID_SIGNATURE", "\(mode): \(forged)")
        }

        // Genuine: pay, then refund the payment it answered; the same refund again answers the same; other content is refused.
        antom.set(FakeAntom.Mode.pay)
        antom.set(FakeAntom.RefundMode.succeed)
        let paid = try await call.send(FakeAntom.path, Self.pay("r-3"))
        #expect(paid.result == "PAYMENT_IN_PROCESS")
        let paymentId = try #require(paid.body?["paymentId"]?.string)
        #expect(try await call.send(FakeAntom.refundPath, Self.refund("f-2", paymentId: "pay-never-taken")).result == "ORDER_NOT_EXIST")
        let refunded = try await call.send(FakeAntom.refundPath, Self.refund("f-3", paymentId: paymentId))
        #expect(refunded.result == "SUCCESS" && refunded.body?["refundRequestId"]?.string == "f-3")
        antom.set(FakeAntom.RefundMode.refuse)
        let again = try await call.send(FakeAntom.refundPath, Self.refund("f-3", paymentId: paymentId))
        #expect(again.result == "SUCCESS" && again.body?["refundId"]?.string == refunded.body?["refundId"]?.string, "the final answer, again")
        let inconsistent = try await call.send(FakeAntom.refundPath,
                                               #"{"refundRequestId":"f-3","paymentId":"\#(paymentId)","refundAmount":{"currency":"USD","value":"1"}}"#)
        #expect(inconsistent.result == "REPEAT_REQ_INCONSISTENT")
        antom.set(FakeAntom.Mode.refuse)
        #expect(try await call.send(FakeAntom.path, Self.pay("r-4")).result == "CURRENCY_NOT_SUPPORT")
        #expect(try await call.send(FakeAntom.path, Self.pay("r-4", amount: "1")).result == "REPEAT_REQ_INCONSISTENT")
    }
}
