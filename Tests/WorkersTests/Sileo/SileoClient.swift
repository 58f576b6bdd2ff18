import Config
import Events
import Foundation
import Merchant
import ProviderAPIs
import Rejections
import Synchronization
import TestSupport
import Testing
import Toolkit
import Workers

/// A scripted Sileo client and what it talks to: the vendor's configuration (a package file in a
/// temporary download directory, the sign-in page's public key in a file), a local merchant sign-in
/// page that signs ES256 assertions with the test's own key, and a checkout starter that records each
/// pending checkout and answers with a payment page on a local server.
final class SileoFixture: Sendable {
    static let base = "/sileo/test"
    static let app = "com.example.repo"
    static let package = "com.example.tweak"
    static let product = "tweak.lifetime"
    /// Served by the merchant's own file server (`downloadURL`), through a signed redirect.
    static let cdnPackage = "com.example.tweak-cdn"
    static let cdnProduct = "tweak-cdn.lifetime"
    static let cdnURL = "https://cdn.example/debs/tweak-cdn_1.0.deb"
    /// What `downloadURLSecretFile` holds (with a newline, as an editor leaves it).
    /// `tokenTtlDays` of the test vendor (not the default, so a test shows the setting is the one read).
    static let tokenTtlDays = 30
    static let downloadSecret = "sileo-test-download-secret-0123456789abcdef"
    static let fileBytes: [UInt8] = Array("!<arch>\ndebian-binary   ".utf8) + (0...255).map { UInt8($0) }

    let directory: URL
    let signingKey: PrivateKey
    let signIn: LoopbackHTTPServer
    let paymentPage: LoopbackHTTPServer
    let checkouts: RecordingCheckouts
    /// Who the sign-in page says signed in, and what it signs (tests forge and replay through these).
    let page: SignInPageState

    init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("sileo-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory.appendingPathComponent("debs"), withIntermediateDirectories: true)
        try Data(Self.fileBytes).write(to: directory.appendingPathComponent("debs/tweak_1.0.deb"))
        try Data((Self.downloadSecret + "\n").utf8).write(to: directory.appendingPathComponent("download.secret"))
        let key = try #require(PrivateKey.generateP256())
        signingKey = key
        try Data(try #require(key.publicKeyPEM).utf8).write(to: directory.appendingPathComponent("signin.pem"))
        let payments = LoopbackHTTPServer { _ in .json(200, "{}") }
        paymentPage = payments
        checkouts = RecordingCheckouts(paymentPageBase: payments.baseURL)
        let page = SignInPageState()
        self.page = page
        // The merchant's page: signs who is signed in, with the nonce it was given, and sends the browser back.
        signIn = LoopbackHTTPServer { request in
            guard let components = URLComponents(string: "http://x" + request.target),
                  let nonce = components.queryItems?.first(where: { $0.name == "nonce" })?.value,
                  let back = components.queryItems?.first(where: { $0.name == "return_url" })?.value else {
                return .json(400, #"{"error":"no nonce"}"#)
            }
            let assertion = page.override.withLock { $0 }?(nonce)
                ?? Self.assertion(key: key, user: page.user.withLock { $0 }, nonce: nonce)
            return LoopbackHTTPServer.Reply(status: 302, headers: [("Location", back + "?assertion=" + assertion)], body: [])
        }
    }

    func stop() {
        signIn.stop()
        paymentPage.stop()
        try? FileManager.default.removeItem(at: directory)
    }

    /// The vendor as `sileo.vendors[]` configures it, served at `publicBaseURL`.
    func vendor(publicBaseURL: String, ttlSeconds: Int = 120, provider: String = "alipayplus") throws -> SileoVendor {
        let settings = SileoSettings.Vendor(
            basePath: Self.base, name: "Test Repo", icon: "https://repo.example/icon.png", description: "Test Pay",
            authenticationBanner: SileoSettings.Banner(message: "Sign in to buy", button: "Sign in"),
            publicBaseURL: publicBaseURL, app: Self.app, provider: provider,
            signIn: SileoSettings.SignIn(url: signIn.baseURL + "/signin", assertionKeyFile: directory.appendingPathComponent("signin.pem").path),
            downloadDirectory: directory.path, downloadURLSecretFile: directory.appendingPathComponent("download.secret").path,
            downloadKeyTtlSeconds: ttlSeconds, tokenTtlDays: Self.tokenTtlDays,
            packages: [
                SileoSettings.Package(id: Self.package, product: Self.product, amountMinor: 199, currency: "USD", price: "$1.99",
                                      recoveryURL: "https://repo.example/help", file: "debs/tweak_1.0.deb"),
                SileoSettings.Package(id: "com.example.retired", product: "retired", amountMinor: 99, currency: "USD", price: "$0.99",
                                      available: false, recoveryURL: "https://repo.example/retired", downloadURL: "https://cdn.example/retired.deb"),
                SileoSettings.Package(id: Self.cdnPackage, product: Self.cdnProduct, amountMinor: 299, currency: "USD", price: "$2.99",
                                      downloadURL: Self.cdnURL),
            ])
        return try SileoVendor.load(settings)
    }

    /// A compact JWS ES256 as the merchant's page signs it.
    static func assertion(key: PrivateKey, user: String, nonce: String, issuedAt: Int64 = Timestamp.now.millisecondsSince1970 / 1000,
                          lifetime: Int64 = 120, alg: String = "ES256") -> String {
        struct Header: Encodable { var alg: String; var typ = "JWT" }
        struct Claims: Encodable { var sub, name, email, nonce: String; var iat, exp: Int64 }
        return CompactJWS.signed(header: Header(alg: alg),
                                 claims: Claims(sub: user, name: "Name of \(user)", email: "\(user)@example.com", nonce: nonce,
                                                iat: issuedAt, exp: issuedAt + lifetime),
                                 sign: { key.signES256($0) }) ?? ""
    }

    /// A purchase of the package for `user`, as the gateway publishes a provider's paid notification.
    static func purchase(_ type: EventType, id: String, user: String, subject: String, product: String = product) -> NormalizedEvent {
        let now = Timestamp.now
        return NormalizedEvent(id: id, type: type, source: "/alipayplus/demo-client", environment: .production, app: app, subject: subject,
                               occurredAt: now.rfc3339, receivedAt: now.rfc3339, user: user, product: product,
                               transaction: NormalizedEvent.Transaction(), subscription: NormalizedEvent.Subscription(),
                               sourceType: type.rawValue)
    }
}

/// What the local sign-in page signs: for whom, or (when set) an assertion a test makes from the nonce.
final class SignInPageState: Sendable {
    let user = Mutex<String>("user-a")
    let override = Mutex<(@Sendable (_ nonce: String) -> String)?>(nil)
}

/// Records each checkout as pending and answers with a payment page on a local server, as the real
/// checkouts answer with Antom's cashier page.
final class RecordingCheckouts: CheckoutStarting {
    let paymentPageBase: String
    let pending = Mutex<[CheckoutIntent]>([])

    init(paymentPageBase: String) { self.paymentPageBase = paymentPageBase }

    func start(_ intent: CheckoutIntent) async throws(Rejection) -> StartedCheckout {
        let number = pending.withLock { $0.append(intent); return $0.count }
        return StartedCheckout(id: "co-\(number)", reference: "ref-\(number)", paymentURL: paymentPageBase + "/pay?checkout=co-\(number)",
                               notifyURL: nil, expiresAtMs: Timestamp.now.millisecondsSince1970 + 900_000)
    }
}

/// The device's credentials after a sign-in.
struct SileoCredentialsOnDevice: Sendable {
    var token: String
    var paymentSecret: String
    var bearer: String { "BEARER " + token }
}

extension SileoFixture {
    /// Sileo's sign-in, step by step: /authenticate, the merchant's page, back to Tollgate with the
    /// browser's cookie, and Tollgate's redirect to `sileo://authentication_success`.
    func signIn(at base: String) async throws -> SileoCredentialsOnDevice {
        let start = try await SileoHTTP.call("GET", base + Self.base + "/authenticate?udid=4e1243bd22c66e76c2ba9eddc1f91394e57f9f83&model=iPhone7%2C2")
        try #require(start.status == 302)
        let cookie = try #require(start.headers["set-cookie"]?.split(separator: ";").first.map(String.init))
        let page = try await SileoHTTP.call("GET", start.location)
        try #require(page.status == 302)
        let back = try await SileoHTTP.call("GET", page.location, cookie: cookie)
        try #require(back.status == 302, "completion answered \(back.status): \(String(decoding: back.body, as: UTF8.self))")
        let callback = try #require(URLComponents(string: back.location))
        try #require(callback.scheme == "sileo" && callback.host == "authentication_success")
        let token = try #require(callback.queryItems?.first { $0.name == "token" }?.value)
        let secret = try #require(callback.queryItems?.first { $0.name == "payment_secret" }?.value)
        try #require(token.hasPrefix("BEARER "))
        return SileoCredentialsOnDevice(token: String(token.dropFirst(7)), paymentSecret: secret)
    }

    /// The start of a sign-in up to the merchant's redirect back: its completion URL and the browser's cookie.
    func signInUpToReturn(at base: String) async throws -> (returnURL: String, cookie: String) {
        let start = try await SileoHTTP.call("GET", base + Self.base + "/authenticate?udid=x&model=y")
        let cookie = try #require(start.headers["set-cookie"]?.split(separator: ";").first.map(String.init))
        let page = try await SileoHTTP.call("GET", start.location)
        return (page.location, cookie)
    }
}
