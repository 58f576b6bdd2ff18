import Entitlements
import Store
import Toolkit

/// The Sileo vendor's secrets in the entitlement store (migration 7): sign-in nonces, user tokens with
/// their payment secrets, and download keys. Each is 256 random bits, handed out once and kept only
/// as its SHA-256, so a copy of the database gives no working credential. A secret is found by its
/// hash, and the stored hash is compared again in constant time; a guess of a 256-bit secret cannot
/// be steered by timing either way.
struct SileoCredentials: Sendable {
    let store: EntitlementStore
    /// The vendor's base path: credentials of one vendor never work on another.
    let vendor: String

    /// The signed-in user a token stands for.
    struct Holder: Sendable, Equatable {
        var user: String
        var name: String?
        var email: String?
        var paymentSecretHash: String
        var tokenHash: String
    }

    /// What a download key allows: one download of one package for one user.
    struct DownloadGrant: Sendable, Equatable {
        var user: String
        var package: String
    }

    /// A new secret: 32 bytes from the system's CSPRNG (getrandom on Linux), as 64 hex digits.
    static func newSecret() -> String {
        var generator = SystemRandomNumberGenerator()
        return Digest.hex((0..<32).map { _ in UInt8.random(in: .min ... .max, using: &generator) })
    }

    static func hash(_ secret: String) -> String { Digest.hex(Digest.sha256(secret)) }

    // MARK: Nonces

    /// Records a sign-in nonce bound to the browser that asked (`browserSecret`, its cookie).
    func issueNonce(_ nonce: String, browserSecret: String, expiresAtMs: Int64, nowMs: Int64) async throws(StoreError) {
        let vendor = self.vendor
        _ = try await store.database.transaction { connection throws(StoreError) in
            try connection.execute("DELETE FROM sileo_nonces WHERE expires_at_ms < $1", [.int(nowMs)])
            try connection.execute("INSERT INTO sileo_nonces (nonce_hash, vendor, browser_hash, expires_at_ms) VALUES ($1, $2, $3, $4)",
                                   [.text(Self.hash(nonce)), .text(vendor), .text(Self.hash(browserSecret)), .int(expiresAtMs)])
        }
    }

    /// Takes the nonce (it is gone after this call, whatever the answer): true when this vendor issued it,
    /// it has not expired, and `browserSecret` is the cookie it was issued with.
    func consumeNonce(_ nonce: String, browserSecret: String?, nowMs: Int64) async throws(StoreError) -> Bool {
        let vendor = self.vendor, nonceHash = Self.hash(nonce)
        let row = try await store.database.transaction { connection throws(StoreError) -> (browser: String, expires: Int64)? in
            let rows = try connection.query("SELECT browser_hash, expires_at_ms FROM sileo_nonces WHERE nonce_hash = $1 AND vendor = $2",
                                            [.text(nonceHash), .text(vendor)])
            guard let row = rows.first, let browser = row.text("browser_hash"), let expires = row.int("expires_at_ms") else { return nil }
            // Deleted in the same transaction that read it: two completions racing find it once.
            guard try connection.execute("DELETE FROM sileo_nonces WHERE nonce_hash = $1", [.text(nonceHash)]) == 1 else { return nil }
            return (browser, expires)
        }
        guard let row, row.expires > nowMs, let browserSecret else { return false }
        return ConstantTime.equals(Self.hash(browserSecret), row.browser)
    }

    // MARK: Tokens

    /// Records a token and its payment secret for `user`.
    func issueToken(_ token: String, paymentSecret: String, user: String, name: String?, email: String?,
                    expiresAtMs: Int64, nowMs: Int64) async throws(StoreError) {
        let vendor = self.vendor
        _ = try await store.database.transaction { connection throws(StoreError) in
            try connection.execute("DELETE FROM sileo_tokens WHERE expires_at_ms < $1", [.int(nowMs)])
            try connection.execute("""
                INSERT INTO sileo_tokens (token_hash, vendor, user_id, name, email, payment_secret_hash, created_at_ms, expires_at_ms)
                VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
                """, [.text(Self.hash(token)), .text(vendor), .text(user), SQLValue(name), SQLValue(email),
                      .text(Self.hash(paymentSecret)), .int(nowMs), .int(expiresAtMs)])
        }
    }

    /// The holder of `token`, nil when it is unknown (never issued, signed out, another vendor's) or expired.
    func holder(of token: String, nowMs: Int64) async throws(StoreError) -> Holder? {
        let vendor = self.vendor, tokenHash = Self.hash(token)
        return try await store.database.read { connection throws(StoreError) -> Holder? in
            let rows = try connection.query("""
                SELECT token_hash, user_id, name, email, payment_secret_hash, expires_at_ms FROM sileo_tokens
                WHERE token_hash = $1 AND vendor = $2
                """, [.text(tokenHash), .text(vendor)])
            guard let row = rows.first, let stored = row.text("token_hash"), ConstantTime.equals(stored, tokenHash),
                  let user = row.text("user_id"), let secret = row.text("payment_secret_hash"),
                  let expires = row.int("expires_at_ms"), expires > nowMs else { return nil }
            return Holder(user: user, name: row.text("name"), email: row.text("email"), paymentSecretHash: secret, tokenHash: stored)
        }
    }

    /// Signs the token out: it is unknown from now on.
    func revoke(_ holder: Holder) async throws(StoreError) {
        _ = try await store.database.transaction { connection throws(StoreError) in
            try connection.execute("DELETE FROM sileo_tokens WHERE token_hash = $1", [.text(holder.tokenHash)])
        }
    }

    // MARK: Download keys

    func issueDownloadKey(_ key: String, user: String, package: String, expiresAtMs: Int64, nowMs: Int64) async throws(StoreError) {
        let vendor = self.vendor
        _ = try await store.database.transaction { connection throws(StoreError) in
            try connection.execute("DELETE FROM sileo_download_keys WHERE expires_at_ms < $1", [.int(nowMs)])
            try connection.execute("""
                INSERT INTO sileo_download_keys (key_hash, vendor, user_id, package, expires_at_ms) VALUES ($1, $2, $3, $4, $5)
                """, [.text(Self.hash(key)), .text(vendor), .text(user), .text(package), .int(expiresAtMs)])
        }
    }

    /// Takes the key (single use: it is gone after this call, whatever the answer): what it allows when it
    /// was issued by this vendor for `package` and has not expired.
    func consumeDownloadKey(_ key: String, package: String, nowMs: Int64) async throws(StoreError) -> DownloadGrant? {
        let vendor = self.vendor, keyHash = Self.hash(key)
        return try await store.database.transaction { connection throws(StoreError) -> DownloadGrant? in
            let rows = try connection.query("""
                SELECT key_hash, user_id, package, expires_at_ms FROM sileo_download_keys WHERE key_hash = $1 AND vendor = $2
                """, [.text(keyHash), .text(vendor)])
            guard let row = rows.first, let stored = row.text("key_hash"), let user = row.text("user_id"),
                  let granted = row.text("package"), let expires = row.int("expires_at_ms") else { return nil }
            guard try connection.execute("DELETE FROM sileo_download_keys WHERE key_hash = $1", [.text(keyHash)]) == 1 else { return nil }
            guard ConstantTime.equals(stored, keyHash), granted == package, expires > nowMs else { return nil }
            return DownloadGrant(user: user, package: granted)
        }
    }
}
