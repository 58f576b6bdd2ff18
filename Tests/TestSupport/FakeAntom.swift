import Foundation
import Synchronization
import Toolkit

/// Antom's `pay` (Cashier Payment, `POST /ams/api/v1/payments/pay`) and `refund`
/// (`POST /ams/api/v1/payments/refund`) on a loopback port, answering as Antom documents. Written from the documentation, apart from Tollgate's own signing code, so a
/// test holds Tollgate to the scheme rather than to itself: the request's `Signature:
/// algorithm=RSA256,keyVersion=<n>,signature=<URL-encoded base64>` must verify, with the merchant's
/// public key, SHA256withRSA over `POST <path>\n<Client-Id>.<Request-Time>.<body>`; the answer is `U`
/// PAYMENT_IN_PROCESS with the cashier page in `normalUrl`, signed with the platform key over the same
/// content with its `Response-Time` and body (`Client-Id`, `Response-Time`, `Signature` headers). A
/// refund is answered S SUCCESS with the `refundId` Antom assigns (or as `RefundMode` says).
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

    public struct Seen: Sendable {
        public var path: String
        public var body: JSONValue?
        public var signatureVerified: Bool
    }

    private final class State: Sendable {
        let values = Mutex<(mode: Mode, refundMode: RefundMode, seen: [Seen])>((.pay, .succeed, []))
    }

    private let server: LoopbackHTTPServer
    private let state = State()
    public var baseURL: String { server.baseURL }

    public init(merchantPublicKey: PublicKey, platformKey: PrivateKey) {
        let otherKey = PrivateKey.generateRSA()
        server = LoopbackHTTPServer { [state] request in
            let clientId = request.header("Client-Id") ?? ""
            let isRefund = request.target == Self.refundPath
            let path = isRefund ? Self.refundPath : Self.path
            let content = Self.content(path: path, clientId: clientId, time: request.header("Request-Time") ?? "", body: request.body)
            let verified = request.method == "POST" && (request.target == Self.path || isRefund)
                && Self.signature(request.header("Signature")).map { merchantPublicKey.verifyRSASHA256(message: content, signature: $0) } == true
            let body = JSONValue.parse(request.body)
            let (mode, refundMode) = state.values.withLock { values in
                values.seen.append(Seen(path: request.target, body: body, signatureVerified: verified))
                return (values.mode, values.refundMode)
            }
            let requestId = body?["paymentRequestId"]?.string ?? ""
            var answer: String
            if isRefund {
                if refundMode == .serverError {
                    return .json(500, #"{"result":{"resultCode":"UNKNOWN_EXCEPTION","resultStatus":"U","resultMessage":"error"}}"#)
                }
                answer = refundMode == .refuse
                    ? #"{"result":{"resultCode":"REFUND_WINDOW_EXCEED","resultStatus":"F","resultMessage":"refund window exceeded"}}"#
                    : refundMode == .inProcess
                    ? #"{"result":{"resultCode":"REFUND_IN_PROCESS","resultStatus":"U","resultMessage":"refund in process"},"refundRequestId":"\#(body?["refundRequestId"]?.string ?? "")","refundId":"\#(Self.refundId(body?["refundRequestId"]?.string ?? ""))"}"#
                    : #"{"result":{"resultCode":"SUCCESS","resultStatus":"S","resultMessage":"success"},"refundAmount":\#(body?["refundAmount"]?.canonical ?? "{}"),"refundTime":"2026-11-23T12:05:01+08:00","paymentId":"\#(body?["paymentId"]?.string ?? "")","refundRequestId":"\#(body?["refundRequestId"]?.string ?? "")","refundId":"\#(Self.refundId(body?["refundRequestId"]?.string ?? ""))"}"#
                if !verified {
                    answer = #"{"result":{"resultCode":"INVALID_SIGNATURE","resultStatus":"F","resultMessage":"invalid signature"}}"#
                }
                return Self.signed(answer, clientId: clientId, path: path, key: platformKey)
            }
            switch mode {
            case .serverError:
                return .json(500, #"{"result":{"resultCode":"UNKNOWN_EXCEPTION","resultStatus":"U","resultMessage":"error"}}"#)
            case .refuse:
                answer = #"{"result":{"resultCode":"CURRENCY_NOT_SUPPORT","resultStatus":"F","resultMessage":"currency not supported"}}"#
            case .unknown:
                answer = #"{"result":{"resultCode":"UNKNOWN_EXCEPTION","resultStatus":"U","resultMessage":"unknown"}}"#
            case .pay, .wronglySigned:
                answer = verified
                    ? #"{"result":{"resultCode":"PAYMENT_IN_PROCESS","resultStatus":"U","resultMessage":"payment in process"},"paymentRequestId":"\#(requestId)","paymentId":"2026112319400000001","normalUrl":"\#(Self.pageURL(requestId))","paymentCreateTime":"2026-11-23T12:01:01+08:00"}"#
                    : #"{"result":{"resultCode":"INVALID_SIGNATURE","resultStatus":"F","resultMessage":"invalid signature"}}"#
            }
            return Self.signed(answer, clientId: clientId, path: path, key: mode == .wronglySigned ? otherKey : platformKey)
        }
    }

    /// The answer with Antom's response headers, signed over `POST <path>\n<Client-Id>.<Response-Time>.<body>`.
    static func signed(_ answer: String, clientId: String, path: String, key: PrivateKey?) -> LoopbackHTTPServer.Reply {
        let responseTime = "2026-11-23T12:01:01+08:00"
        let signature = key?.signRSASHA256(Self.content(path: path, clientId: clientId, time: responseTime, body: Array(answer.utf8))) ?? []
        return LoopbackHTTPServer.Reply(status: 200, headers: [("Content-Type", "application/json; charset=UTF-8"), ("Client-Id", clientId),
                                                               ("Response-Time", responseTime),
                                                               ("Signature", "algorithm=RSA256,keyVersion=1,signature=\(Self.urlEncode(Base64.encodeStandard(signature)))")],
                                        body: Array(answer.utf8))
    }

    /// The `refundId` the fake assigns to a refund request.
    public static func refundId(_ refundRequestId: String) -> String { "2026112319500000" + String(refundRequestId.suffix(8)) }

    /// The cashier page the fake answers for a payment request.
    public static func pageURL(_ paymentRequestId: String) -> String {
        "https://open-sea-global.alipay.com/page/cashier?id=\(paymentRequestId)"
    }

    public func set(_ mode: Mode) { state.values.withLock { $0.mode = mode } }
    public func set(_ mode: RefundMode) { state.values.withLock { $0.refundMode = mode } }
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
