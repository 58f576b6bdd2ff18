import Events
import Foundation
import Logging
import Metrics
import Senders
import Toolkit

/// The calls of Antom's API, as metric labels.
enum AntomAPICall: String, Sendable, CaseIterable {
    case pay
}

typealias AntomAPIMetrics = OutboundAPIMetrics<AntomAPICall>

extension OutboundAPIMetrics where Call == AntomAPICall {
    init(factory: any MetricsFactory) { self.init(factory: factory, api: "antom_api") }
}

/// One Alipay+ client able to start payments: its id, the merchant private key that signs the calls
/// (read from `merchantPrivateKey`; the path and the key are never logged) and the platform public keys
/// that verify Antom's answers (the same that verify its notifications).
struct AntomMerchant: Sendable {
    let clientId: String
    let merchantKey: PrivateKey
    let merchantKeyVersion: Int?
    let platformKeys: [PublicKey]
}

/// What a `pay` (cashier payment) call came to.
enum AntomPayOutcome: Sendable, Equatable {
    /// The cashier page the payer is sent to (`normalUrl`).
    case paymentPage(String)
    /// `resultStatus` F: Antom will not take this payment (its `resultCode`).
    case refused(resultCode: String)
    /// No usable answer: unreachable, timed out, non-200, `U` other than PAYMENT_IN_PROCESS, an
    /// answer whose signature does not verify or that cannot be read (a kind for metrics, a message).
    case unavailable(kind: String, message: String)
}

/// Antom's `pay` (Cashier Payment), `POST /ams/api/v1/payments/pay`: the request signed with the
/// merchant key as Antom documents (SHA256withRSA over `POST <path>\n<Client-Id>.<Request-Time>.<body>`,
/// the content the Alipay+ sender verifies notifications with), the answer's signature verified with
/// Antom's public key before anything in it is used.
struct AntomPayClient: Sendable {
    static let path = "/ams/api/v1/payments/pay"

    let baseURL: String
    let fetcher: any HTTPFetcher
    let timeout: Duration
    let metrics: AntomAPIMetrics
    let logger: Logger

    struct Amount: Encodable { var currency: String; var value: String }
    struct Order: Encodable {
        var referenceOrderId: String
        var orderDescription: String
        var orderAmount: Amount
    }
    struct PaymentMethod: Encodable { var paymentMethodType: String }
    struct Env: Encodable { var terminalType: String }
    struct SettlementStrategy: Encodable { var settlementCurrency: String }
    struct PayRequest: Encodable {
        var productCode = "CASHIER_PAYMENT"
        var paymentRequestId: String
        var order: Order
        var paymentAmount: Amount
        var paymentMethod: PaymentMethod
        var paymentRedirectUrl: String
        var paymentNotifyUrl: String
        var env: Env
        var settlementStrategy: SettlementStrategy
    }

    private static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }()

    func pay(_ request: PayRequest, merchant: AntomMerchant, now: Timestamp = .now) async -> AntomPayOutcome {
        guard let body = try? Self.encoder.encode(request).map({ $0 }) else {
            return fail(.unavailable(kind: "encode", message: "the pay request could not be written"))
        }
        let requestTime = String(now.millisecondsSince1970)
        let content = AlipayPlusSource.signedContent(path: Self.path, clientId: merchant.clientId, time: requestTime, body: body)
        guard let signature = merchant.merchantKey.signRSASHA256(content) else {
            return fail(.unavailable(kind: "signing", message: "the merchant key could not sign"))
        }
        let fetch = HTTPFetchRequest(url: baseURL + Self.path, method: "POST",
                                     headers: [("Content-Type", "application/json; charset=UTF-8"), ("Client-Id", merchant.clientId),
                                               ("Request-Time", requestTime),
                                               ("Signature", AlipayPlusSignature.header(signature: signature,
                                                                                        keyVersion: merchant.merchantKeyVersion ?? 1))],
                                     body: body, timeout: timeout, maxResponseBytes: 65_536)
        let (outcome, elapsed) = await fetcher.timedFetch(fetch)
        metrics.requestDuration(.pay, elapsed)
        let response: HTTPFetchResponse
        switch outcome {
        case .success(let answered): response = answered
        case .failure(.timeout): return fail(.unavailable(kind: "timeout", message: "Antom did not answer within \(elapsed.wholeMilliseconds) ms"))
        case .failure(.network(let message)): return fail(.unavailable(kind: "network", message: "Antom cannot be reached: \(message)"))
        }
        guard response.status == 200 else {
            return fail(.unavailable(kind: "http_\(response.status)", message: "Antom answered HTTP \(response.status)"))
        }
        guard verified(response, merchant: merchant) else {
            return fail(.unavailable(kind: "bad_signature", message: "Antom's answer does not verify with the client's platform public keys"))
        }
        guard let answer = JSONValue.parse(response.body)?.object, let result = answer["result"]?.object,
              let status = result["resultStatus"]?.string else {
            return fail(.unavailable(kind: "decode", message: "Antom's answer has no result.resultStatus"))
        }
        let code = result["resultCode"]?.string ?? ""
        // A cashier payment is started, not finished, by this call: Antom answers U PAYMENT_IN_PROCESS
        // with the page to send the payer to (an S with the page is taken the same way).
        switch status {
        case "F":
            return fail(.refused(resultCode: code))
        case "S", "U":
            if status == "U", code != "PAYMENT_IN_PROCESS" {
                return fail(.unavailable(kind: "unknown_result", message: "Antom answered U \(code)"))
            }
            guard let page = answer["normalUrl"]?.string, page.hasPrefix("https://") || page.hasPrefix("http://") else {
                return fail(.unavailable(kind: "decode", message: "Antom's answer \(status) \(code) has no normalUrl"))
            }
            return .paymentPage(page)
        default:
            return fail(.unavailable(kind: "decode", message: "Antom's resultStatus is neither S, U nor F"))
        }
    }

    /// `Signature` over `POST <path>\n<Client-Id>.<Response-Time>.<body>`, with the platform keys the
    /// key version selects (all of them when it names none).
    private func verified(_ response: HTTPFetchResponse, merchant: AntomMerchant) -> Bool {
        guard let time = response.headers["response-time"], !time.isEmpty,
              let parsed = AlipayPlusSignature.parse(response.headers["signature"]) else { return false }
        let clientId = response.headers["client-id"] ?? merchant.clientId
        guard clientId == merchant.clientId else { return false }
        let content = AlipayPlusSource.signedContent(path: Self.path, clientId: clientId, time: time, body: response.body)
        return merchant.platformKeys.contains { $0.verifyRSASHA256(message: content, signature: parsed.signature) }
    }

    private func fail(_ outcome: AntomPayOutcome) -> AntomPayOutcome {
        switch outcome {
        case .refused(let code):
            metrics.error(.pay, kind: "refused")
            logger.notice("Antom refused the payment", metadata: ["result_code": .string(code)])
        case .unavailable(let kind, let message):
            metrics.error(.pay, kind: kind)
            logger.warning("Antom pay failed", metadata: ["kind": .string(kind), "error": .string(message)])
        case .paymentPage: break
        }
        return outcome
    }
}
