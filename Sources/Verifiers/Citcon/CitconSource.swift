import Config
import Events
import Rejections
import Toolkit

/// Citcon IPNs: UPI (JSON, SHA-256 with the account's secret) and legacy CHOP (form, MD5 with the
/// account's API token). `/webhooks/citcon/<account>` checks that account's secrets only;
/// `/webhooks/citcon` tries every account's.
public struct CitconSource: WebhookSource {
    public let name = SourceName.citcon
    public let mediaTypes: [MediaType] = [.json, .form]
    private let accounts: [CitconSettings.Account]

    public init(settings: CitconSettings) {
        accounts = settings.accounts
    }

    public func accept(_ request: WebhookRequest) throws(Rejection) -> AcceptedDelivery {
        let candidates = try accounts(for: request.path)
        let format = CitconBody.format(mediaType: MediaType(contentType: request.headers["content-type"]), body: request.body)
        let body = try CitconBody.parse(request.body, format: format)
        guard let sign = body.values["sign"] else { throw Rejection(.missingSignature, "sign is missing") }
        guard case .text(let claimed) = sign, !claimed.isEmpty else { throw Rejection(.missingSignature, "sign is empty or not text") }
        let signature = try CitconSignature(body: body)
        let account = try authenticate(claimed.lowercased(), signature: signature, format: format, among: candidates)

        var event = try CitconNormalizer(account: account, body: body, signedNames: Set(signature.signedNames),
                                         receivedAt: request.receivedAt).event()
        event.environment = candidates.first { $0.name == account }?.environment ?? .production
        return AcceptedDelivery(events: [event], rawKey: event.subject, response: .text("ok"))
    }

    /// The account a route names, or all of them on the shared route.
    func accounts(for path: String) throws(Rejection) -> [CitconSettings.Account] {
        let segments = path.split(separator: "?", maxSplits: 1).first.map { $0.split(separator: "/") } ?? []
        guard segments.count >= 3, segments[segments.count - 3] == "webhooks", segments[segments.count - 2] == "citcon" else {
            return accounts
        }
        let named = String(segments[segments.count - 1])
        guard let account = accounts.first(where: { $0.name == named }) else {
            throw Rejection(.unknownAccount, "no Citcon account is configured under the name in this URL")
        }
        return [account]
    }

    /// The name of the account one of whose secrets produces `claimed`. Every secret of every candidate
    /// is compared in constant time, so timing reveals neither the secret nor which account matched.
    private func authenticate(_ claimed: String, signature: CitconSignature, format: CitconBody.Format,
                              among candidates: [CitconSettings.Account]) throws(Rejection) -> String {
        var matched: String?
        var tried = 0
        for account in candidates {
            let secrets = format == .upi ? account.secrets : account.tokens
            tried += secrets.count
            let expected = secrets.map(signature.expected(secret:))
            if ConstantTime.firstMatch(claimed, in: expected) != nil, matched == nil { matched = account.name }
        }
        guard let matched else {
            let kind = format == .upi ? "UPI secret" : "CHOP API token"
            throw Rejection(.badSignature, tried == 0
                ? "no \(kind) is configured for this route"
                : "sign matches no configured \(kind) (\(format.rawValue) IPN)")
        }
        return matched
    }
}
