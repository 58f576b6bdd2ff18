import ArgumentParser
import Events
import Foundation
import Merchant
import Toolkit

/// Signs a user token as the merchant's backend would (docs/security.md): for trying the client
/// credential's routes by hand with `tollgate dev`. A backend signs its own with any JWT library.
struct UserTokenCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "user-token",
        abstract: "Print an ES256 user token (sub: the user, aud: the app) signed with a P-256 private key, as a merchant's backend signs one.")

    @Option(help: "The P-256 private key (PEM), whose public half is api.userTokenKeys.<app>.") var key: String
    @Option(help: "The app the token is for (its aud).") var app: String
    @Option(help: "The user the token names (its sub).") var user: String
    @Option(help: "Seconds the token lives (at most 3600).") var ttl: Int64 = 900

    func run() throws {
        guard (1...3_600).contains(ttl) else { throw ValidationError("--ttl must be 1 to 3600 seconds") }
        guard let data = FileManager.default.contents(atPath: key), let privateKey = PrivateKey.load(pemOrDER: Array(data)), privateKey.isP256 else {
            throw ValidationError("\(key) is not a readable P-256 private key")
        }
        guard let token = UserTokenSigner.sign(user: user, app: app, key: privateKey, nowMs: Timestamp.now.millisecondsSince1970, ttlSeconds: ttl) else {
            throw ValidationError("signing failed")
        }
        print(token)
    }
}
