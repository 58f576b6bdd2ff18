import Toolkit

/// A symmetric signing secret as Standard Webhooks writes it: `whsec_` and the standard base64 of 24 to
/// 64 random bytes. Its bytes sign `v1` signatures (HMAC-SHA256).
public struct WebhookSecret: Sendable, CustomStringConvertible {
    public static let prefix = "whsec_"
    let key: [UInt8]
    /// Never the secret: what a log line or an error may show.
    public var description: String { "whsec_(\(key.count) bytes)" }

    /// Refuses anything but `whsec_` + padded standard base64 of 24 to 64 bytes: the receivers' libraries
    /// decode leniently (Python's drops characters it does not know), so only an exact secret means the
    /// same key on both sides.
    public init(_ text: String) throws(WebhookKeyError) {
        guard text.hasPrefix(Self.prefix) else { throw WebhookKeyError("a signing secret starts with \(Self.prefix)") }
        guard let key = Base64.decodeStandard(text.dropFirst(Self.prefix.count)) else {
            throw WebhookKeyError("a signing secret is \(Self.prefix) and standard base64 (with its padding)")
        }
        guard (24...64).contains(key.count) else {
            throw WebhookKeyError("a signing secret holds 24 to 64 bytes, this one \(key.count)")
        }
        self.key = key
    }

    /// A new secret of 32 random bytes (the system's generator), written as configuration takes it.
    public static func generate() -> String {
        var generator = SystemRandomNumberGenerator()
        return prefix + Base64.encodeStandard((0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) })
    }
}

/// An Ed25519 key pair for `v1a` signatures: `whsk_` and the standard base64 of its 32-byte seed, or of
/// the 64 bytes of seed and public key (the form Svix's libraries write; the public half must match).
/// Receivers verify with `publicKey`, written `whpk_` and the base64 of its 32 bytes.
public struct WebhookSigningKey: Sendable, CustomStringConvertible {
    public static let prefix = "whsk_"
    public static let publicPrefix = "whpk_"
    let key: PrivateKey
    /// `whpk_...`: what a receiver is given.
    public let publicKey: String
    /// Never the private key: its public half.
    public var description: String { publicKey }

    public init(_ text: String) throws(WebhookKeyError) {
        guard text.hasPrefix(Self.prefix) else { throw WebhookKeyError("a signing key starts with \(Self.prefix)") }
        guard let bytes = Base64.decodeStandard(text.dropFirst(Self.prefix.count)), bytes.count == 32 || bytes.count == 64 else {
            throw WebhookKeyError("a signing key is \(Self.prefix) and the standard base64 of a 32-byte Ed25519 seed (or of seed and public key, 64 bytes)")
        }
        guard let key = PrivateKey(ed25519Seed: Array(bytes.prefix(32))), let publicBytes = key.ed25519PublicKey else {
            throw WebhookKeyError("the signing key is not an Ed25519 seed")
        }
        guard bytes.count == 32 || ConstantTime.equals(Array(bytes.suffix(32)), publicBytes) else {
            throw WebhookKeyError("the signing key's public half is not its seed's")
        }
        self.key = key
        self.publicKey = Self.publicPrefix + Base64.encodeStandard(publicBytes)
    }

    /// A new key, written as configuration takes it (its 32-byte seed).
    public static func generate() -> String? {
        PrivateKey.generateEd25519()?.ed25519Seed.map { prefix + Base64.encodeStandard($0) }
    }
}

public struct WebhookKeyError: Error, Sendable, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}

/// The three headers of the Standard Webhooks specification for one attempt of one message: its id
/// (the same on every attempt), the attempt's time in Unix seconds, and one signature per secret
/// (`v1,`: HMAC-SHA256) and per key (`v1a,`: Ed25519), each over `id.timestamp.body`, space-separated,
/// so a receiver holding either of two secrets (a rotation) verifies.
public enum WebhookSignature {
    public static let idHeader = "webhook-id"
    public static let timestampHeader = "webhook-timestamp"
    public static let signatureHeader = "webhook-signature"

    /// nil for an id a receiver could misread: empty, longer than 255, or other than letters, digits,
    /// `_` and `-` (the signed content is split on its dots).
    public static func headers(id: String, timestampSeconds: Int64, body: [UInt8], secrets: [WebhookSecret],
                               keys: [WebhookSigningKey] = []) -> [(name: String, value: String)]? {
        guard isValidId(id), !(secrets.isEmpty && keys.isEmpty) else { return nil }
        let content = Array("\(id).\(timestampSeconds).".utf8) + body
        var signatures = secrets.map { "v1," + Base64.encodeStandard(Digest.hmacSHA256(key: $0.key, message: content)) }
        for key in keys {
            guard let signature = key.key.signEd25519(content) else { return nil }
            signatures.append("v1a," + Base64.encodeStandard(signature))
        }
        return [(idHeader, id), (timestampHeader, String(timestampSeconds)), (signatureHeader, signatures.joined(separator: " "))]
    }

    static func isValidId(_ id: String) -> Bool {
        !id.isEmpty && id.utf8.count <= 255
            && id.utf8.allSatisfy { byte in
                (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A) || byte == 0x5F || byte == 0x2D
            }
    }
}
