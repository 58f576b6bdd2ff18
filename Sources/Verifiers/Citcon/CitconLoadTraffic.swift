import Toolkit

extension CitconSender {
    struct LoadIdentity: Codable {
        var account = "bench"
        var secret: String
    }

    /// One account with a generated UPI secret.
    public static func prepareLoad(in directory: LoadDirectory) throws -> String? {
        let identity = LoadIdentity(secret: randomHex(16))
        try directory.write(json: identity, "identity.json")
        return #"{ accounts: [{ name: \#(identity.account), secrets: ["\#(identity.secret)"] }] }"#
    }

    public static func loadTraffic(from directory: LoadDirectory) throws -> (any LoadTraffic)? {
        let identity = try directory.read(json: LoadIdentity.self, "identity.json")
        return CitconLoadTraffic(account: identity.account, secret: identity.secret)
    }
}


/// Citcon UPI IPNs: a flat JSON object whose `fields` names the signed members, signed with the
/// lowercase hex SHA-256 of the sorted `name=value` pairs followed by `&secret=` (docs/senders/citcon.md).
struct CitconLoadTraffic: LoadTraffic {
    let checksPerRequest = 0
    let algorithm: String? = nil

    let account: String
    let secret: String

    static let fields = "id,transaction_type,reference,amount,currency,status,time_completed,time_created,payment_method,amount_captured,amount_refunded"

    func request(_ index: Int, run: String) -> LoadRequest {
        let values: [(String, String)] = [
            ("amount", "1999"), ("amount_captured", ""), ("amount_refunded", ""), ("currency", "USD"), ("fields", Self.fields),
            ("id", "\(run)\(index)"), ("payment_method", "wechatpay"), ("reference", "order-\(run)-\(index)"),
            ("status", "success"), ("time_completed", "2026-01-01T00:00:02.000Z"), ("time_created", "2026-01-01T00:00:00.000Z"),
            ("transaction_type", "charge"),
        ]
        // Already in byte order, as the signature wants them.
        let signed = values.map { "\($0.0)=\($0.1)" }.joined(separator: "&") + "&secret=" + secret
        let sign = Digest.hex(Digest.sha256(signed))
        let members = values.map { name, value in name == "amount" ? #""amount":\#(value)"# : #""\#(name)":"\#(value)""# }
        let body = "{" + members.joined(separator: ",") + #","sign":"\#(sign)"}"#
        return LoadRequest(path: "/webhooks/citcon/\(account)", headers: [("Content-Type", "application/json")], body: Array(body.utf8))
    }
}
