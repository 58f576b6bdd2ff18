import Config
import Events
import Foundation
import ProviderAPIs
import Rejections
import Testing
@testable import Toolkit
@testable import Verifiers

/// RSA keys generated once per test run, and notifications signed the way Antom and Alipay+ sign them.
enum AlipayPlusFixtures {
    static let platformKey = PrivateKey.generateRSA()!
    static let rotatedPlatformKey = PrivateKey.generateRSA()!
    static let foreignKey = PrivateKey.generateRSA()!
    static let merchantKey = PrivateKey.generateRSA()!

    static let clientId = "SANDBOX_5YBZ1N2Z8Q6L01234"
    static let path = "/webhooks/alipayplus"
    static let requestTime = "2026-11-21T12:00:00+08:00"
    static let receivedAt = Timestamp(rfc3339: "2026-11-21T04:00:01.000Z")!

    /// One client with an unversioned key and a merchant key; one with keys bound to versions 1 and 2.
    static let source = AlipayPlusSource(clients: [
        AntomAccount(clientId: clientId, platformKeys: [.init(key: platformKey.publicKey!, keyVersion: nil)],
                         merchantKey: merchantKey, merchantKeyVersion: 3),
        AntomAccount(clientId: "versioned", platformKeys: [.init(key: platformKey.publicKey!, keyVersion: 1),
                                                               .init(key: rotatedPlatformKey.publicKey!, keyVersion: 2)]),
    ])

    static let antomBody = #"{"notifyType":"PAYMENT_RESULT","result":{"resultCode":"SUCCESS","resultStatus":"S","resultMessage":"success"},"paymentRequestId":"order-2026-11","paymentId":"20261121194010800100188820200000001","paymentAmount":{"currency":"USD","value":"1999"},"paymentCreateTime":"2026-11-21T11:59:30+08:00","paymentTime":"2026-11-21T11:59:58+08:00"}"#

    static let acquirerBody = #"{"notifyType":"PAYMENT_RESULT","paymentResult":{"resultCode":"USER_BALANCE_NOT_ENOUGH","resultStatus":"F","resultMessage":"balance"},"paymentRequestId":"order-77","paymentId":"2026112100000077","paymentAmount":{"currency":"JPY","value":"500"},"paymentTime":"2026-11-21T12:00:00+09:00","acquirerId":"ACQ1","pspId":"PSP9","customerId":"cust-5"}"#

    /// Alipay+ to an issuing participant (MPP): no notifyType, the outcome in paymentResult.
    static let issuerBody = #"{"paymentResult":{"resultCode":"SUCCESS","resultStatus":"S","resultMessage":"success"},"paymentRequestId":"order-2026-11","paymentId":"20261121194010800100188820200000001","paymentTime":"2026-11-21T11:59:58+08:00","paymentCreateTime":"2026-11-21T11:59:30+08:00","paymentAmount":{"value":"1999","currency":"USD"},"payToAmount":{"value":"2700","currency":"SGD"},"customerId":"mpp-user-3"}"#

    /// Alipay+ to an acquiring participant (ACQP), a failure: no notifyType, no paymentId yet.
    static let acquirerFailureBody = #"{"paymentResult":{"resultCode":"PAYMENT_FAIL","resultStatus":"F","resultMessage":"payment failed"},"paymentRequestId":"acq-order-9","acquirerId":"1022188000000000001","paymentAmount":{"value":"800","currency":"KRW"}}"#

    /// Antom's notifyRefund, as its API reference lists the fields: the merchant's refundRequestId, Antom's refundId.
    static let refundBody = #"{"notifyType":"REFUND_RESULT","result":{"resultCode":"SUCCESS","resultStatus":"S","resultMessage":"success."},"refundStatus":"SUCCESS","refundRequestId":"rf-order-2026-11","refundId":"20261121194010800100188820200000077","refundAmount":{"currency":"USD","value":"1999"},"refundTime":"2026-11-21T12:10:00+08:00"}"#

    /// A refund Antom could not make: FAIL, no refundTime.
    static let refundFailureBody = #"{"notifyType":"REFUND_RESULT","result":{"resultCode":"REFUND_WINDOW_EXCEED","resultStatus":"F","resultMessage":"refund window exceeded"},"refundStatus":"FAIL","refundRequestId":"rf-order-2026-11","refundId":"20261121194010800100188820200000078","refundAmount":{"currency":"USD","value":"1999"}}"#

    /// Antom's notifyDispute, judged against the merchant (the payer gets the money back).
    static let disputeJudgedBody = #"{"paymentRequestId":"order-2026-11","disputeId":"2026112519401080010018880000001","paymentId":"20261121194010800100188820200000001","disputeTime":"2026-11-25T10:00:00+08:00","disputeAmount":{"currency":"USD","value":"1999"},"disputeNotificationType":"DISPUTE_JUDGED","disputeReasonCode":"4853","disputeJudgedTime":"2026-11-26T10:00:00+08:00","disputeJudgedAmount":{"currency":"USD","value":"1999"},"disputeJudgedResult":"ACCEPT_BY_MERCHANT"}"#

    /// The dispute's opening: funds frozen, nothing decided.
    static let disputeCreatedBody = #"{"paymentRequestId":"order-2026-11","disputeId":"2026112519401080010018880000001","paymentId":"20261121194010800100188820200000001","disputeTime":"2026-11-25T10:00:00+08:00","disputeAmount":{"currency":"USD","value":"1999"},"disputeNotificationType":"DISPUTE_CREATED","defendable":"true","defenseDueTime":"2026-12-02T10:00:00+08:00","disputeReasonCode":"4853"}"#

    /// The `Signature` header for `body` as the platform signs it.
    static func signature(body: String, path: String = path, clientId: String = clientId, requestTime: String = requestTime,
                          key: PrivateKey = platformKey, keyVersion: String? = "1", urlEncoded: Bool = true) -> String {
        let content = Array("POST \(path)\n\(clientId).\(requestTime).\(body)".utf8)
        let base64 = Base64.encodeStandard(key.signRSASHA256(content)!)
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        let encoded = urlEncoded ? base64.addingPercentEncoding(withAllowedCharacters: allowed)! : base64
        return "algorithm=RSA256," + (keyVersion.map { "keyVersion=\($0)," } ?? "") + "signature=" + encoded
    }

    static func request(_ body: String, path: String = path, headers: [String: String?] = [:]) -> WebhookRequest {
        var fields: [String: String?] = ["Content-Type": "application/json; charset=UTF-8", "Client-Id": clientId,
                                         "Request-Time": requestTime, "Signature": signature(body: body)]
        for (name, value) in headers { fields[name] = value }
        var headerFields = HeaderFields()
        for (name, value) in fields.sorted(by: { $0.key < $1.key }) {
            if let value { headerFields.append(name: name, value: value) }
        }
        return WebhookRequest(path: path, headers: headerFields, body: Array(body.utf8), receivedAt: receivedAt)
    }
}
