import Foundation
import Synchronization
import Toolkit

/// Antom's `pay` (Cashier Payment, `POST /ams/api/v1/payments/pay`) and `refund`
/// (`POST /ams/api/v1/payments/refund`) on a loopback port, answering as Antom documents. Written from the documentation, apart from Tollgate's own signing code, so a
/// test holds Tollgate to the scheme rather than to itself: the request's `Signature:
/// algorithm=RSA256,keyVersion=<n>,signature=<URL-encoded base64>` must verify, with the merchant's
/// public key, SHA256withRSA over `POST <path>\n<Client-Id>.<Request-Time>.<body>`; the answer is `U`
/// PAYMENT_IN_PROCESS with the cashier page in `normalUrl`, signed with the platform key over the same
/// content with its `Response-Time` (now, in Antom's ISO 8601 form) and body (`Client-Id`,
/// `Response-Time`, `Signature` headers). A refund of a payment it answered is S SUCCESS with the
/// `refundId` Antom assigns (or as `RefundMode` says). In every mode it first refuses, as Antom does, a
/// request from another `Client-Id` (INVALID_CLIENT), without `Request-Time` (PARAM_ILLEGAL), or whose
/// signature does not verify (INVALID_SIGNATURE); a request id answered S or F before gets that answer
/// again, and with another body REPEAT_REQ_INCONSISTENT. `AnswerTime` and `answerForAnotherRequest`
/// play the one in between who replays an older genuine answer: still signed with the platform key.
public final class FakeAntom: Sendable {
    public static let path = "/ams/api/v1/payments/pay"
    public static let refundPath = "/ams/api/v1/payments/refund"

    public enum RefundMode: Sendable {
        /// S SUCCESS (F INVALID_SIGNATURE when the request's signature fails).
        case succeed
        /// U REFUND_IN_PROCESS: the notification tells the end.
        case inProcess
        /// F REFUND_WINDOW_EXCEED.
        case refuse
        /// HTTP 500.
        case serverError
    }

    public enum Mode: Sendable {
        /// U PAYMENT_IN_PROCESS with a cashier page (F INVALID_SIGNATURE when the request's signature fails).
        case pay
        /// F CURRENCY_NOT_SUPPORT.
        case refuse
        /// U UNKNOWN_EXCEPTION.
        case unknown
        /// The paying answer, signed with a key that is not the platform's.
        case wronglySigned
        /// HTTP 500.
        case serverError
    }

    /// The `Response-Time` of every answer.
    public enum AnswerTime: Sendable {
        /// The time of answering, as Antom does.
        case now
        /// That many seconds from now: negative, an older answer replayed; positive, one dated ahead.
        case shifted(seconds: Int)
        /// No `Response-Time` header (the signature then covers an empty time).
        case missing
        /// A `Response-Time` that is no time.
        case unparsable
    }

    public struct Seen: Sendable {
        public var path: String
        public var body: JSONValue?
        public var signatureVerified: Bool
    }

    private struct Values: Sendable {
        var mode = Mode.pay
        var refundMode = RefundMode.succeed
        var answerTime = AnswerTime.now
        /// Answers name another paymentRequestId / refundRequestId than the request's.
        var anotherRequest = false
        var seen: [Seen] = []
        /// Final (S or F) answers by request id, with the body they answered: Antom answers the same
        /// request id and body with the same result, and refuses the id with another body.
        var answered: [String: (body: String, answer: String)] = [:]
        /// The paymentIds pay answered: a refund names one of them.
        var payments: Set<String> = []
    }

    private final class State: Sendable {
        let values = Mutex(Values())
    }

    private let server: LoopbackHTTPServer
    private let state = State()
    public var baseURL: String { server.baseURL }

    /// - Parameter clientId: the merchant's `Client-Id` at Antom; a request naming another is refused
    ///   (INVALID_CLIENT), unsigned, since Antom holds no key for a client it does not know.
    public init(merchantPublicKey: PublicKey, platformKey: PrivateKey, clientId: String) {
        let otherKey = PrivateKey.generateRSA()
        let merchantClient = clientId
        server = LoopbackHTTPServer { [state] request in
            let clientId = request.header("Client-Id") ?? ""
            let isRefund = request.target == Self.refundPath
            let path = isRefund ? Self.refundPath : Self.path
            let requestTime = request.header("Request-Time") ?? ""
            let content = Self.content(path: path, clientId: clientId, time: requestTime, body: request.body)
            let keyVersion = request.header("Signature").flatMap { header in
                header.split(separator: ",").first { $0.hasPrefix("keyVersion=") }.map { String($0.dropFirst("keyVersion=".count)) }
            }
            let verified = request.method == "POST" && (request.target == Self.path || isRefund) && (keyVersion == nil || keyVersion == "1")
                && Self.signature(request.header("Signature")).map { merchantPublicKey.verifyRSASHA256(message: content, signature: $0) } == true
            let body = JSONValue.parse(request.body)
            let values = state.values.withLock { values in
                values.seen.append(Seen(path: request.target, body: body, signatureVerified: verified))
                return values
            }
            let (mode, refundMode, time) = (values.mode, values.refundMode, values.answerTime)
            // Refusals come before anything the test scripted, in every mode, as Antom checks them first.
            guard clientId == merchantClient else {
                return .json(200, #"{"result":{"resultCode":"INVALID_CLIENT","resultStatus":"F","resultMessage":"The client is invalid. Check whether clientId is correct."}}"#)
            }
            let refuse = { (code: String, message: String) in
                Self.signed(#"{"result":{"resultCode":"\#(code)","resultStatus":"F","resultMessage":"\#(message)"}}"#,
                            clientId: clientId, path: path, key: platformKey, time: time)
            }
            guard !requestTime.isEmpty else {
                return refuse("PARAM_ILLEGAL", "Request-Time is required")
            }
            guard verified else { return refuse("INVALID_SIGNATURE", "invalid signature") }
            // The answer to an earlier request, replayed: its ids are that request's.
            let named = { (sent: String) in values.anotherRequest ? "tg0000replayed" + String(sent.suffix(8)) : sent }
            let sentId = (isRefund ? body?["refundRequestId"]?.string : body?["paymentRequestId"]?.string) ?? ""
            let replayed = { (answer: String) in
                values.anotherRequest && !sentId.isEmpty ? answer.replacingOccurrences(of: "\"\(sentId)\"", with: "\"\(named(sentId))\"") : answer
            }
            let canonical = body?.canonical ?? ""
            if let earlier = values.answered[(isRefund ? "refund:" : "pay:") + sentId] {
                guard earlier.body == canonical else {
                    return refuse("REPEAT_REQ_INCONSISTENT", "the request id was used with other content")
                }
                return Self.signed(replayed(earlier.answer), clientId: clientId, path: path, key: platformKey, time: time)
            }
            var answer: String
            if isRefund {
                if refundMode == .serverError {
                    return .json(500, #"{"result":{"resultCode":"UNKNOWN_EXCEPTION","resultStatus":"U","resultMessage":"error"}}"#)
                }
                let paymentId = body?["paymentId"]?.string ?? ""
                guard values.payments.contains(paymentId) else { return refuse("ORDER_NOT_EXIST", "the payment does not exist") }
                answer = refundMode == .refuse
                    ? #"{"result":{"resultCode":"REFUND_WINDOW_EXCEED","resultStatus":"F","resultMessage":"refund window exceeded"}}"#
                    : refundMode == .inProcess
                    ? #"{"result":{"resultCode":"REFUND_IN_PROCESS","resultStatus":"U","resultMessage":"refund in process"},"refundRequestId":"\#(sentId)","refundId":"\#(Self.refundId(sentId))"}"#
                    : #"{"result":{"resultCode":"SUCCESS","resultStatus":"S","resultMessage":"success"},"refundAmount":\#(body?["refundAmount"]?.canonical ?? "{}"),"refundTime":"2026-11-23T12:05:01+08:00","paymentId":"\#(paymentId)","refundRequestId":"\#(sentId)","refundId":"\#(Self.refundId(sentId))"}"#
                if refundMode != .inProcess { state.values.withLock { $0.answered["refund:" + sentId] = (canonical, answer) } }
                return Self.signed(replayed(answer), clientId: clientId, path: path, key: platformKey, time: time)
            }
            switch mode {
            case .serverError:
                return .json(500, #"{"result":{"resultCode":"UNKNOWN_EXCEPTION","resultStatus":"U","resultMessage":"error"}}"#)
            case .refuse:
                answer = #"{"result":{"resultCode":"CURRENCY_NOT_SUPPORT","resultStatus":"F","resultMessage":"currency not supported"}}"#
                state.values.withLock { $0.answered["pay:" + sentId] = (canonical, answer) }
            case .unknown:
                answer = #"{"result":{"resultCode":"UNKNOWN_EXCEPTION","resultStatus":"U","resultMessage":"unknown"}}"#
            case .pay, .wronglySigned:
                let paymentId = Self.paymentId(sentId)
                state.values.withLock { _ = $0.payments.insert(paymentId) }
                answer = #"{"result":{"resultCode":"PAYMENT_IN_PROCESS","resultStatus":"U","resultMessage":"payment in process"},"paymentRequestId":"\#(sentId)","paymentId":"\#(paymentId)","normalUrl":"\#(Self.pageURL(sentId))","paymentCreateTime":"2026-11-23T12:01:01+08:00"}"#
            }
            return Self.signed(replayed(answer), clientId: clientId, path: path, key: mode == .wronglySigned ? otherKey : platformKey, time: time)
        }
    }

    /// The `paymentId` the fake assigns to a payment request (as the fixtures' notifications name it).
    public static func paymentId(_ paymentRequestId: String) -> String { "pay-" + paymentRequestId }

    /// The answer with Antom's response headers, signed over `POST <path>\n<Client-Id>.<Response-Time>.<body>`.
    static func signed(_ answer: String, clientId: String, path: String, key: PrivateKey?, time: AnswerTime) -> LoopbackHTTPServer.Reply {
        let responseTime: String?
        switch time {
        case .now: responseTime = antomTime(Date())
        case .shifted(let seconds): responseTime = antomTime(Date(timeIntervalSinceNow: TimeInterval(seconds)))
        case .missing: responseTime = nil
        case .unparsable: responseTime = "yesterday at noon"
        }
        let signature = key?.signRSASHA256(Self.content(path: path, clientId: clientId, time: responseTime ?? "", body: Array(answer.utf8))) ?? []
        var headers = [("Content-Type", "application/json; charset=UTF-8"), ("Client-Id", clientId)]
        if let responseTime { headers.append(("Response-Time", responseTime)) }
        headers.append(("Signature", "algorithm=RSA256,keyVersion=1,signature=\(Self.urlEncode(Base64.encodeStandard(signature)))"))
        return LoopbackHTTPServer.Reply(status: 200, headers: headers, body: Array(answer.utf8))
    }

    /// ISO 8601 to the second with Antom's +08:00 offset (`2026-11-23T12:01:01+08:00`), as its answers carry it.
    static func antomTime(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime]
        formatter.timeZone = TimeZone(secondsFromGMT: 8 * 3600)
        return formatter.string(from: date)
    }

    /// The `refundId` the fake assigns to a refund request.
    public static func refundId(_ refundRequestId: String) -> String { "2026112319500000" + String(refundRequestId.suffix(8)) }

    /// The cashier page the fake answers for a payment request.
    public static func pageURL(_ paymentRequestId: String) -> String {
        "https://open-sea-global.alipay.com/page/cashier?id=\(paymentRequestId)"
    }

    public func set(_ mode: Mode) { state.values.withLock { $0.mode = mode } }
    public func set(_ mode: RefundMode) { state.values.withLock { $0.refundMode = mode } }
    public func set(_ time: AnswerTime) { state.values.withLock { $0.answerTime = time } }
    /// Whether answers (pay and refund, still signed) name another request's id than the one sent.
    public func answerForAnotherRequest(_ another: Bool) { state.values.withLock { $0.anotherRequest = another } }
    public var seen: [Seen] { state.values.withLock { $0.seen } }
    public func stop() { server.stop() }

    /// `POST <path>\n<Client-Id>.<time>.<body>`.
    public static func content(path: String = path, clientId: String, time: String, body: [UInt8]) -> [UInt8] {
        Array("POST \(path)\n\(clientId).\(time).".utf8) + body
    }

    /// The bytes of `signature=` in an Antom `Signature` header.
    static func signature(_ header: String?) -> [UInt8]? {
        guard let header, header.contains("algorithm=RSA256"),
              let part = header.split(separator: ",").first(where: { $0.hasPrefix("signature=") }),
              let base64 = PercentDecoding.decode(part.dropFirst("signature=".count).utf8, plusIsSpace: false) else { return nil }
        return Base64.decodeStandard(base64[...])
    }

    /// Antom's escaping of the base64 signature: everything but RFC 3986 unreserved characters.
    public static func urlEncode(_ text: String) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        return text.addingPercentEncoding(withAllowedCharacters: allowed) ?? text
    }
}
