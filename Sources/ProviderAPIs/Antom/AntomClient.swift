import Events
import Foundation
import Logging
import Metrics
import Toolkit

/// The calls of Antom's API, as metric labels.
public enum AntomAPICall: String, Sendable, CaseIterable {
    case pay
    case refund

    var path: String {
        switch self {
        case .pay: "/ams/api/v1/payments/pay"
        case .refund: "/ams/api/v1/payments/refund"
        }
    }
}

public typealias AntomAPIMetrics = OutboundAPIMetrics<AntomAPICall>

extension OutboundAPIMetrics where Call == AntomAPICall {
    public init(factory: any MetricsFactory) { self.init(factory: factory, api: "antom_api") }
}

/// What a `pay` (cashier payment) call came to.
public enum AntomPayOutcome: Sendable, Equatable {
    /// The cashier page the payer is sent to (`normalUrl`).
    case paymentPage(String)
    /// `resultStatus` F: Antom will not take this payment (its `resultCode`).
    case refused(resultCode: String)
    /// No usable answer: unreachable, timed out, non-200, `U` other than PAYMENT_IN_PROCESS, an
    /// answer whose signature does not verify, whose `Response-Time` is missing or outside the window,
    /// that names another `paymentRequestId`, or that cannot be read (a kind for metrics, a message).
    case unavailable(kind: String, message: String)
}

/// What a `refund` call came to.
public enum AntomRefundOutcome: Sendable, Equatable {
    /// S: Antom refunded; its signed answer (`refundId`, `refundAmount`, `refundTime`).
    case refunded([String: JSONValue])
    /// U REFUND_IN_PROCESS: the notification will say how it ended.
    case inProcess
    /// `resultStatus` F: Antom will not refund (its `resultCode`, e.g. REFUND_WINDOW_EXCEED).
    case refused(resultCode: String)
    /// No usable answer, as for `pay`.
    case unavailable(kind: String, message: String)
}

/// Antom's API as checkouts call it: `pay` (Cashier Payment) and `refund`, each request signed with the
/// merchant key as Antom documents (SHA256withRSA over `POST <path>\n<Client-Id>.<Request-Time>.<body>`,
/// the content the Alipay+ sender verifies notifications with), each answer's signature verified with
/// Antom's public key before anything in it is used. A signature alone does not make an answer this
/// call's: an older signed answer replayed by someone in between verifies too, so the answer's signed
/// `Response-Time` must be within `answerWindowSeconds` of this clock and it must name the request id sent.
public struct AntomClient: Sendable {

    let baseURL: String
    let fetcher: any HTTPFetcher
    let timeout: Duration
    /// `checkouts.antomAnswerWindowSeconds`: how far, either way, `Response-Time` may be from `now`.
    let answerWindowSeconds: Int
    let metrics: AntomAPIMetrics
    let logger: Logger
    /// Milliseconds since 1970: the `Request-Time` sent and the clock answers are judged by.
    let now: @Sendable () -> Int64

    public init(baseURL: String, fetcher: any HTTPFetcher, timeout: Duration, answerWindowSeconds: Int, metrics: AntomAPIMetrics,
                logger: Logger, now: @escaping @Sendable () -> Int64) {
        self.baseURL = baseURL
        self.fetcher = fetcher
        self.timeout = timeout
        self.answerWindowSeconds = answerWindowSeconds
        self.metrics = metrics
        self.logger = logger
        self.now = now
    }

    /// A Cashier Payment to start: amounts in the currency's minor units, as Antom takes them.
    public struct CashierPayment: Sendable {
        public var paymentRequestId: String
        public var referenceOrderId: String
        public var orderDescription: String
        public var currency: String
        public var amountMinor: Int64
        public var paymentMethodType: String
        public var redirectURL: String
        public var notifyURL: String

        public init(paymentRequestId: String, referenceOrderId: String, orderDescription: String, currency: String, amountMinor: Int64,
                    paymentMethodType: String, redirectURL: String, notifyURL: String) {
            self.paymentRequestId = paymentRequestId
            self.referenceOrderId = referenceOrderId
            self.orderDescription = orderDescription
            self.currency = currency
            self.amountMinor = amountMinor
            self.paymentMethodType = paymentMethodType
            self.redirectURL = redirectURL
            self.notifyURL = notifyURL
        }
    }

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
    /// A full refund of the payment; `refundRequestId` is Antom's idempotency key, so asking again with
    /// it after a timeout cannot refund twice.
    struct RefundRequest: Encodable {
        var refundRequestId: String
        var paymentId: String
        var refundAmount: Amount
        var refundNotifyUrl: String
    }

    private static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }()

    public func pay(_ payment: CashierPayment, account: AntomAccount) async -> AntomPayOutcome {
        let amount = Amount(currency: payment.currency, value: String(payment.amountMinor))
        let request = PayRequest(paymentRequestId: payment.paymentRequestId,
                                 order: Order(referenceOrderId: payment.referenceOrderId, orderDescription: payment.orderDescription,
                                              orderAmount: amount),
                                 paymentAmount: amount, paymentMethod: PaymentMethod(paymentMethodType: payment.paymentMethodType),
                                 paymentRedirectUrl: payment.redirectURL, paymentNotifyUrl: payment.notifyURL,
                                 env: Env(terminalType: "WEB"), settlementStrategy: SettlementStrategy(settlementCurrency: payment.currency))
        let answer: (status: String, code: String, body: [String: JSONValue])
        switch await call(.pay, request, account: account) {
        case .success(let verified): answer = verified
        case .failure(let failure): return unavailable(.pay, failure)
        }
        // Antom names the paymentRequestId in the answers that start a payment (an F may name none); an
        // answer naming another is one to another request, replayed, whose page is someone else's payment.
        let named = answer.body["paymentRequestId"]?.string
        let otherRequest = CallFailure(kind: "wrong_request_id", message: "Antom's \(answer.status) answer does not name the paymentRequestId sent")
        // A cashier payment is started, not finished, by this call: Antom answers U PAYMENT_IN_PROCESS
        // with the page to send the payer to (an S with the page is taken the same way).
        switch answer.status {
        case "F":
            if let named, named != request.paymentRequestId { return unavailable(.pay, otherRequest) }
            failed(.pay, refused: answer.code)
            return .refused(resultCode: answer.code)
        case "S", "U":
            if answer.status == "U", answer.code != "PAYMENT_IN_PROCESS" {
                return unavailable(.pay, CallFailure(kind: "unknown_result", message: "Antom answered U \(answer.code)"))
            }
            guard named == request.paymentRequestId else { return unavailable(.pay, otherRequest) }
            guard let page = answer.body["normalUrl"]?.string, page.hasPrefix("https://") || page.hasPrefix("http://") else {
                return unavailable(.pay, CallFailure(kind: "decode", message: "Antom's answer \(answer.status) \(answer.code) has no normalUrl"))
            }
            return .paymentPage(page)
        default:
            return unavailable(.pay, CallFailure(kind: "decode", message: "Antom's resultStatus is neither S, U nor F"))
        }
    }

    /// A full refund of `paymentId`; `refundRequestId` is Antom's idempotency key.
    public func refund(refundRequestId: String, paymentId: String, currency: String, amountMinor: Int64, notifyURL: String,
                       account: AntomAccount) async -> AntomRefundOutcome {
        let request = RefundRequest(refundRequestId: refundRequestId, paymentId: paymentId,
                                    refundAmount: Amount(currency: currency, value: String(amountMinor)), refundNotifyUrl: notifyURL)
        let answer: (status: String, code: String, body: [String: JSONValue])
        switch await call(.refund, request, account: account) {
        case .success(let verified): answer = verified
        case .failure(let failure):
            failed(.refund, unavailable: failure)
            return .unavailable(kind: failure.kind, message: failure.message)
        }
        // An S answer is published as the refund of the checkout this request was recorded on, so it
        // must name that request; no answer may name another (one to another refund, replayed).
        let named = answer.body["refundRequestId"]?.string
        if named != request.refundRequestId, named != nil || answer.status == "S" {
            let failure = CallFailure(kind: "wrong_request_id", message: "Antom's \(answer.status) answer does not name the refundRequestId sent")
            failed(.refund, unavailable: failure)
            return .unavailable(kind: failure.kind, message: failure.message)
        }
        switch (answer.status, answer.code) {
        case ("S", _): return .refunded(answer.body)
        case ("U", "REFUND_IN_PROCESS"): return .inProcess
        case ("F", _):
            failed(.refund, refused: answer.code)
            return .refused(resultCode: answer.code)
        default:
            let failure = CallFailure(kind: "unknown_result", message: "Antom answered \(answer.status) \(answer.code)")
            failed(.refund, unavailable: failure)
            return .unavailable(kind: failure.kind, message: failure.message)
        }
    }

    struct CallFailure: Error { var kind: String; var message: String }

    private func unavailable(_ call: AntomAPICall, _ failure: CallFailure) -> AntomPayOutcome {
        failed(call, unavailable: failure)
        return .unavailable(kind: failure.kind, message: failure.message)
    }

    /// Signs and sends one call; the answer's `result.resultStatus`, `resultCode` and body once its
    /// signature verified and its `Response-Time` is within the window.
    private func call(_ call: AntomAPICall, _ request: some Encodable,
                      account: AntomAccount) async -> Result<(status: String, code: String, body: [String: JSONValue]), CallFailure> {
        guard let body = try? Self.encoder.encode(request).map({ $0 }) else {
            return .failure(CallFailure(kind: "encode", message: "the \(call.rawValue) request could not be written"))
        }
        let requestTime = String(now())
        let content = AntomSignature.signedContent(path: call.path, clientId: account.clientId, time: requestTime, body: body)
        guard let signature = account.merchantKey?.signRSASHA256(content) else {
            return .failure(CallFailure(kind: "signing", message: "the merchant key could not sign"))
        }
        let fetch = HTTPFetchRequest(url: baseURL + call.path, method: "POST",
                                     headers: [("Content-Type", "application/json; charset=UTF-8"), ("Client-Id", account.clientId),
                                               ("Request-Time", requestTime),
                                               ("Signature", AntomSignature.header(signature: signature, keyVersion: account.merchantKeyVersion ?? 1))],
                                     body: body, timeout: timeout, maxResponseBytes: 65_536)
        let (outcome, elapsed) = await fetcher.timedFetch(fetch)
        metrics.requestDuration(call, elapsed)
        let response: HTTPFetchResponse
        switch outcome {
        case .success(let answered): response = answered
        case .failure(.timeout):
            return .failure(CallFailure(kind: "timeout", message: "Antom did not answer within \(elapsed.wholeMilliseconds) ms"))
        case .failure(.network(let message)): return .failure(CallFailure(kind: "network", message: "Antom cannot be reached: \(message)"))
        }
        guard response.status == 200 else {
            return .failure(CallFailure(kind: "http_\(response.status)", message: "Antom answered HTTP \(response.status)"))
        }
        guard let responseTime = response.headers["response-time"], !responseTime.isEmpty else {
            return .failure(CallFailure(kind: "response_time", message: "Antom's answer has no Response-Time"))
        }
        guard verified(response, responseTime: responseTime, path: call.path, account: account) else {
            return .failure(CallFailure(kind: "bad_signature", message: "Antom's answer does not verify with the client's platform public keys"))
        }
        // Judged once the answer is in hand, by the time it is used.
        guard let answeredAt = AntomSignature.signedTime(responseTime) else {
            return .failure(CallFailure(kind: "response_time", message: "Antom's Response-Time is neither RFC 3339 nor epoch milliseconds"))
        }
        let distanceMs = (now() - answeredAt.millisecondsSince1970).magnitude
        guard distanceMs <= UInt64(answerWindowSeconds) * 1000 else {
            return .failure(CallFailure(kind: "response_time",
                                        message: "Antom's Response-Time is \(distanceMs / 1000) s from this clock, more than checkouts.antomAnswerWindowSeconds (\(answerWindowSeconds))"))
        }
        guard let answer = JSONValue.parse(response.body)?.object, let result = answer["result"]?.object,
              let status = result["resultStatus"]?.string else {
            return .failure(CallFailure(kind: "decode", message: "Antom's answer has no result.resultStatus"))
        }
        return .success((status, result["resultCode"]?.string ?? "", answer))
    }

    /// `Signature` over `POST <path>\n<Client-Id>.<Response-Time>.<body>`, with the platform keys the
    /// key version selects (all of them when it names none).
    private func verified(_ response: HTTPFetchResponse, responseTime time: String, path: String, account: AntomAccount) -> Bool {
        guard let parsed = try? AntomSignature.parse(response.headers["signature"]) else { return false }
        let clientId = response.headers["client-id"] ?? account.clientId
        guard clientId == account.clientId else { return false }
        let content = AntomSignature.signedContent(path: path, clientId: clientId, time: time, body: response.body)
        return account.platformKeys(for: parsed.keyVersion).contains { $0.verifyRSASHA256(message: content, signature: parsed.signature) }
    }

    /// Counts and logs a call Antom refused or did not answer usably (never the request or the key).
    private func failed(_ call: AntomAPICall, refused code: String? = nil, unavailable: CallFailure? = nil) {
        if let code {
            metrics.error(call, kind: "refused")
            logger.notice("Antom refused the \(call.rawValue)", metadata: ["result_code": .string(code)])
        }
        if let unavailable {
            metrics.error(call, kind: unavailable.kind)
            logger.warning("Antom \(call.rawValue) failed", metadata: ["kind": .string(unavailable.kind), "error": .string(unavailable.message)])
        }
    }
}
