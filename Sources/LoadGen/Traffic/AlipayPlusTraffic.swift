import Toolkit
import Senders


/// Antom `notifyPayment` as the platform sends it: `Client-Id`, `Request-Time` and a `Signature`
/// header, SHA256withRSA over `POST <path>\n<Client-Id>.<Request-Time>.<body>` with the platform key
/// (docs/senders/alipayplus.md). Every delivery is signed on its own: one RSA signature each.
struct AlipayPlusTraffic: SenderTraffic {
    let source = "alipayplus"
    let checksPerRequest = 1
    let algorithm: String? = "RS256"

    let key: PrivateKey
    let clientId: String
    static let path = "/webhooks/alipayplus"
    static let requestTime = "2026-01-01T08:00:00+08:00"

    init(directory: String, setup: BenchSetup) throws {
        key = try required(PrivateKey(pem: try readFile(directory, BenchSetup.File.alipayKey)), "Alipay+ platform key")
        clientId = setup.alipayClientId
    }

    func request(_ index: Int, run: String) -> RequestParts {
        let body = #"{"notifyType":"PAYMENT_RESULT","result":{"resultCode":"SUCCESS","resultStatus":"S","resultMessage":"success"},"paymentRequestId":"order-\#(run)-\#(index)","paymentId":"2026010119401080010018\#(run)\#(index)","paymentAmount":{"currency":"USD","value":"1999"},"paymentCreateTime":"2026-01-01T07:59:30+08:00","paymentTime":"2026-01-01T07:59:58+08:00"}"#
        let content = Array("POST \(Self.path)\n\(clientId).\(Self.requestTime).\(body)".utf8)
        // Antom URL-encodes the base64 value; a failed signature shows up as refused deliveries.
        let signature = Base64.encodeStandard(key.signRSASHA256(content) ?? [])
            .replacingAll("+", "%2B").replacingAll("/", "%2F").replacingAll("=", "%3D")
        return RequestParts(path: Self.path, headers: [
            ("Content-Type", "application/json; charset=UTF-8"),
            ("Client-Id", clientId),
            ("Request-Time", Self.requestTime),
            ("Signature", "algorithm=RSA256,keyVersion=1,signature=" + signature),
        ], body: Array(body.utf8))
    }
}

extension String {
    func replacingAll(_ target: Character, _ replacement: String) -> String {
        var out = ""
        out.reserveCapacity(utf8.count)
        for character in self { if character == target { out += replacement } else { out.append(character) } }
        return out
    }
}
