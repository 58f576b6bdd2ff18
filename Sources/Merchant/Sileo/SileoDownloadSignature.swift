import Toolkit

/// The expiring signed URL a download key redirects to for a package served by the merchant's own file
/// server (`packages[].downloadURL`, docs/sileo.md#downloads): the URL with
/// `?expires=<unix seconds>&signature=<hex HMAC-SHA256>`, keyed with the vendor's
/// `downloadURLSecretFile`, over `<path>` + `"\n"` + `<expires>`, where `<path>` is the URL's path as
/// configured (as it appears in the request line the merchant's server receives). The server serves the
/// file only while `expires` has not passed and the signature matches, so a copied link stops working
/// and no other file can be fetched with it.
struct SileoDownloadSignature: Sendable {
    /// The shared secret, as the file holds it (without a trailing newline).
    let secret: [UInt8]

    /// At least this many bytes, so the secret cannot be guessed offline from a signed URL.
    static let minimumSecretBytes = 32

    /// `url` (no query: configuration refuses one) signed to expire at `expires` (seconds since 1970).
    func signedURL(_ url: String, expires: Int64) -> String {
        url + "?expires=\(expires)&signature=" + signature(path: Self.path(of: url), expires: expires)
    }

    /// Lower-case hex HMAC-SHA256 over `<path>\n<expires>`.
    func signature(path: String, expires: Int64) -> String {
        Digest.hex(Digest.hmacSHA256(key: secret, message: Array("\(path)\n\(expires)".utf8)))
    }

    /// The path of an absolute URL: from the first `/` after `scheme://`, `/` when there is none.
    static func path(of url: String) -> String {
        guard let scheme = url.range(of: "://") else { return "/" }
        let afterAuthority = url[scheme.upperBound...].drop { $0 != "/" }
        return afterAuthority.isEmpty ? "/" : String(afterAuthority)
    }

    /// The secret in a file: its bytes without trailing line breaks; nil when shorter than the minimum.
    static func secret(fromFile bytes: [UInt8]) -> [UInt8]? {
        var secret = bytes
        while let last = secret.last, last == 0x0A || last == 0x0D { secret.removeLast() }
        return secret.count >= minimumSecretBytes ? secret : nil
    }
}
