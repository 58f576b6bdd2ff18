import Events
import Toolkit

extension AlipayPlusSender {
    struct LoadIdentity: Codable {
        var clientId = "2188120000012345"
    }

    /// A generated platform key pair: the gateway trusts the public half, the traffic signs with the private one.
    public static func prepareLoad(in directory: LoadDirectory) throws -> String? {
        let key = try PrivateKey.generateRSA(bits: 2048).orLoadError("RSA key")
        try directory.write(try key.pem.orLoadError("Alipay+ key PEM"), "platform-key.pem")
        try directory.write(try key.publicKeyPEM.orLoadError("Alipay+ public key PEM"), "platform-public.pem")
        let identity = LoadIdentity()
        try directory.write(json: identity, "identity.json")
        return #"{ clients: [{ clientId: "\#(identity.clientId)", platformPublicKeys: ["\#(directory.file("platform-public.pem"))"] }] }"#
    }

    public static func loadTraffic(from directory: LoadDirectory) throws -> (any LoadTraffic)? {
        try AlipayPlusLoadTraffic(directory: directory)
    }
}

/// Antom `notifyPayment` as the platform sends it: `Client-Id`, `Request-Time` and a `Signature`
/// header, SHA256withRSA over `POST <path>\n<Client-Id>.<Request-Time>.<body>` with the platform key
/// (docs/senders/alipayplus.md). Every delivery is signed on its own: one RSA signature each.
struct AlipayPlusLoadTraffic: LoadTraffic {
    let checksPerRequest = 1
    let algorithm: String? = "RS256"

    let key: PrivateKey
    let clientId: String
    static let path = "/webhooks/alipayplus"
    /// When the run was prepared: the gateway refuses a `Request-Time` older than its window (25 h by default).
    let requestTime = Timestamp.now.rfc3339

    init(directory: LoadDirectory) throws {
        key = try PrivateKey(pem: try directory.read("platform-key.pem")).orLoadError("Alipay+ platform key")
        clientId = try directory.read(json: AlipayPlusSender.LoadIdentity.self, "identity.json").clientId
    }

    func request(_ index: Int, run: String) -> LoadRequest {
        let body = #"{"notifyType":"PAYMENT_RESULT","result":{"resultCode":"SUCCESS","resultStatus":"S","resultMessage":"success"},"paymentRequestId":"order-\#(run)-\#(index)","paymentId":"2026010119401080010018\#(run)\#(index)","paymentAmount":{"currency":"USD","value":"1999"},"paymentCreateTime":"2026-01-01T07:59:30+08:00","paymentTime":"2026-01-01T07:59:58+08:00"}"#
        let content = Array("POST \(Self.path)\n\(clientId).\(requestTime).\(body)".utf8)
        // Antom URL-encodes the base64 value; a failed signature shows up as refused deliveries.
        let signature = Base64.encodeStandard(key.signRSASHA256(content) ?? [])
            .replacingAll("+", "%2B").replacingAll("/", "%2F").replacingAll("=", "%3D")
        return LoadRequest(path: Self.path, headers: [
            ("Content-Type", "application/json; charset=UTF-8"),
            ("Client-Id", clientId),
            ("Request-Time", requestTime),
            ("Signature", "algorithm=RSA256,keyVersion=1,signature=" + signature),
        ], body: Array(body.utf8))
    }
}

extension String {
    fileprivate func replacingAll(_ target: Character, _ replacement: String) -> String {
        var out = ""
        out.reserveCapacity(utf8.count)
        for character in self { if character == target { out += replacement } else { out.append(character) } }
        return out
    }
}
